package api

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// CheckListen refuses to serve the API without a token anywhere but on a
// loopback address (127.0.0.0/8, ::1 or localhost).
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("dispatcher.listen %q: %v (want host:port, e.g. 127.0.0.1:9006)", addr, err)
	}
	if strings.TrimSpace(token) != "" || IsLoopback(host) {
		return nil
	}
	if host == "" {
		host = "every interface"
	}
	return fmt.Errorf("refusing to serve the API on %s (%s) without a token: set dispatcher.token or token_file, or listen on 127.0.0.1", addr, host)
}

// IsLoopback reports whether host (no port) is a loopback address or
// "localhost".
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
