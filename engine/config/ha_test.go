package config

import (
	"strings"
	"testing"
	"time"
)

// TestHA: [ha] resolves node_name and advertise from the machine and
// listen; check-config refuses HA without a PostgreSQL store or a TCP
// listen, and a lease the leader could not renew within.
func TestHA(t *testing.T) {
	const store = "[store]\nurl = \"postgres://dispatch@db.example:5432/dispatch\"\n"
	const listen = "[dispatcher]\nlisten = \"127.0.0.1:7070\"\ntoken = \"s3cret\"\n"
	for _, tc := range []struct {
		name, body string
		want       HA
		wantErr    string
	}{
		{"off: nothing asked", "", HA{NodeName: hostname(), Lease: 5 * time.Second, LeaseRetry: time.Second}, ""},
		{"on: defaults from the machine and listen", listen + store + "[ha]\nenabled = true\n",
			HA{Enabled: true, NodeName: hostname(), Advertise: "http://127.0.0.1:7070", Lease: 5 * time.Second, LeaseRetry: time.Second}, ""},
		{"a wildcard listen is advertised by hostname, with TLS",
			"[dispatcher]\nlisten = \"0.0.0.0:7070\"\ntoken = \"s3cret\"\n" + store + "[ha]\nenabled = true\nnode_name = \"a\"\n",
			HA{Enabled: true, NodeName: "a", Advertise: "https://" + hostname() + ":7070", Lease: 5 * time.Second, LeaseRetry: time.Second}, ""},
		{"all set", listen + store + "[ha]\nenabled = true\nnode_name = \"n1\"\nadvertise = \"https://n1.example:7070\"\nlease = \"3s\"\nlease_retry = \"500ms\"\n",
			HA{Enabled: true, NodeName: "n1", Advertise: "https://n1.example:7070", Lease: 3 * time.Second, LeaseRetry: 500 * time.Millisecond}, ""},
		{"no store", listen + "[ha]\nenabled = true\n", HA{}, "ha.enabled: needs [store] url"},
		{"no listen", store + "[ha]\nenabled = true\n", HA{}, "ha.enabled: needs [dispatcher] listen on a TCP address"},
		{"listen without a token", "[dispatcher]\nlisten = \"127.0.0.1:7070\"\n" + store + "[ha]\nenabled = true\n", HA{}, "dispatcher.token: required when listen is set"},
		{"lease too short", listen + store + "[ha]\nenabled = true\nlease = \"1500ms\"\nlease_retry = \"100ms\"\n", HA{}, "ha.lease: must be at least 2s"},
		{"retry not shorter than the lease", listen + store + "[ha]\nenabled = true\nlease_retry = \"5s\"\n", HA{}, "ha.lease_retry: must be > 0 and shorter than lease (5s)"},
		{"advertise not a URL", listen + store + "[ha]\nenabled = true\nadvertise = \"n1:7070\"\n", HA{}, "ha.advertise: must be a URL like https://host:port"},
		{"advertise without a port", listen + store + "[ha]\nenabled = true\nadvertise = \"https://n1\"\n", HA{}, "ha.advertise: must be host:port"},
		{"ec2 without a shared key", listen + store + "[cloud]\ndriver = \"ec2\"\n[ha]\nenabled = true\n", HA{}, "ha.enabled: needs [cloud] ssh_key_file with driver = \"ec2\""},
		{"script without a shared key", listen + store + "[cloud]\ndriver = \"script\"\n[ha]\nenabled = true\n", HA{}, "ha.enabled: needs [cloud] ssh_key_file with driver = \"script\""},
		{"node_name with a space", listen + store + "[ha]\nenabled = true\nnode_name = \"a b\"\n", HA{}, "ha.node_name: must be 1 to 63 characters without spaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(StoreURLEnv, "")
			c, err := Parse([]byte(tc.body), "")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse: %v; want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.HA != tc.want {
				t.Fatalf("HA = %+v, want %+v", c.HA, tc.want)
			}
		})
	}
}
