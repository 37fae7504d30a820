module dispatch-tui

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	go.etcd.io/bbolt v1.5.0
	golang.org/x/crypto v0.58.0
)

require (
	github.com/prometheus/client_golang v1.25.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
