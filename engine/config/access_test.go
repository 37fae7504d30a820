package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestTokensAndRoles(t *testing.T) {
	dir := t.TempDir()
	bobFile := filepath.Join(dir, "bob.token")
	if err := os.WriteFile(bobFile, []byte("bob-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Parse(doc(`
[dispatcher]
listen = "0.0.0.0:9006"
token = "old-secret"
tls_cert = "cert.pem"
tls_key = "key.pem"
[[dispatcher.tokens]]
name = "alice"
role = "operator"
token = "alice-secret"
[[dispatcher.tokens]]
name = "bob"
token_file = "bob.token"
`), filepath.Join(dir, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []APIToken{
		{Name: "default", Role: RoleOperator, Token: "old-secret"},
		{Name: "alice", Role: RoleOperator, Token: "alice-secret"},
		{Name: "bob", Role: RoleViewer, Token: "bob-secret", TokenFile: bobFile},
	}
	if got := c.Dispatcher.APITokens(); !reflect.DeepEqual(got, want) {
		t.Errorf("APITokens() = %+v\nwant %+v", got, want)
	}
	if c.Dispatcher.TLSCert != filepath.Join(dir, "cert.pem") || c.Dispatcher.TLSKey != filepath.Join(dir, "key.pem") {
		t.Errorf("tls paths not resolved against the config's dir: %q %q", c.Dispatcher.TLSCert, c.Dispatcher.TLSKey)
	}
}

func TestAccessErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"listen without a token", `
[dispatcher]
listen = "127.0.0.1:9006"
`, []string{"config.toml:2: dispatcher.token: required when listen is set"}},
		{"plain http off loopback", `
[dispatcher]
listen = "0.0.0.0:9006"
token = "x"
tls = "off"
`, []string{"config.toml:4: dispatcher.tls: plain HTTP off loopback would send tokens in clear"}},
		{"cert without key", `
[dispatcher]
tls_cert = "/c.pem"
`, []string{"dispatcher.tls_key: set both tls_cert and tls_key"}},
		{"bad role and name", `
[[dispatcher.tokens]]
name = "a b"
role = "admin"
token = "x"
`, []string{
			`config.toml:2: dispatcher.tokens[0].name: must be 1 to 64 of`,
			`config.toml:3: dispatcher.tokens[0].role: must be "viewer" or "operator" (got "admin")`,
		}},
		{"duplicate names and secrets", `
[dispatcher]
token = "same"
[[dispatcher.tokens]]
name = "default"
token = "same"
`, []string{
			`dispatcher.tokens[0].name: "default" is the name of dispatcher.token`,
			`dispatcher.tokens[0].token: the same secret as another token`,
		}},
		{"token without a secret", `
[[dispatcher.tokens]]
name = "a"
`, []string{"dispatcher.tokens[0].token_file: set token_file (or token)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(doc(tc.body), "config.toml")
			if err == nil {
				t.Fatal("no error")
			}
			es := err.(Errors)
			if len(es) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(es), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.Contains(es[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, es[i].Error(), w)
				}
			}
		})
	}
}

// A token readable by others, or in a file another user owns (who could
// rewrite it), is refused, whether in the config file or in a token file,
// with the chmod or chown that fixes it.
func TestSecretFilesMustBePrivate(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tok")
	if err := os.WriteFile(tokFile, []byte("s"), 0o640); err != nil {
		t.Fatal(err)
	}
	// Files of another user (nobody) and of root, for the owner checks.
	asRoot(t)
	for name, uid := range map[string]int{"nobody.tok": 65534, "root.tok": 0} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("s"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, -1); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, body string
		mode       os.FileMode
		wantErr    string
		nobodys    bool // the config file belongs to nobody (65534)
	}{
		{"inline token, 0644", "[dispatcher]\ntoken = \"s\"\n", 0o644, "run chmod 600 ", false},
		{"inline token, 0600", "[dispatcher]\ntoken = \"s\"\n", 0o600, "", false},
		{"named inline token, 0604", "[[dispatcher.tokens]]\nname = \"a\"\ntoken = \"s\"\n", 0o604, "run chmod 600 ", false},
		{"no token, 0644", "[dispatcher]\ntoken = \"\"\n", 0o644, "", false},
		{"token file 0640", "[dispatcher]\ntoken_file = \"tok\"\n", 0o600, "run chmod 600 " + tokFile, false},
		{"inline token, another user's", "[dispatcher]\ntoken = \"s\"\n", 0o600, "belongs to uid 65534, not to this user", true},
		{"no token, another user's", "[dispatcher]\ntoken = \"\"\n", 0o644, "", true},
		{"token file, another user's", "[dispatcher]\ntoken_file = \"nobody.tok\"\n", 0o600, "run chown ", false},
		{"token file, root's", "[dispatcher]\ntoken_file = \"root.tok\"\n", 0o600, "", false},
		{"store url with a password, 0644", "[store]\nurl = \"postgres://d:pw@db/q\"\n", 0o644, "holds the store URL's password (or move it to url_file or ~/.pgpass): " + dir + "/c.toml is accessible by group or others (mode 0644): run chmod 600 ", false},
		{"store url with a password parameter, 0640", "[store]\nurl = \"postgres://d@db/q?password=pw\"\n", 0o640, "run chmod 600 ", false},
		{"store url with a password, 0600", "[store]\nurl = \"postgres://d:pw@db/q\"\n", 0o600, "", false},
		{"store url without a password, 0644", "[store]\nurl = \"postgres://d@db/q?sslmode=require\"\n", 0o644, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "c.toml")
			if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			owner := os.Geteuid()
			if tc.nobodys {
				owner = 65534
			}
			if err := os.Chown(path, owner, -1); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Load: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Load = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// asRoot skips a test that needs to chown files when not root, except on
// CI, where it fails.
func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root to give a file to another user")
		}
		t.Skip("needs root to give a file to another user")
	}
}
