// Who may reach the API: the checks of listen, the tokens and TLS, and
// the reading of token files.

package config

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"dispatch-tui/engine/secretfile"
	"dispatch-tui/engine/view"
)

func listenAddr(v string, s *site) {
	if v == "" {
		return
	}
	if msg := hostPortProblem(v, 0); msg != "" {
		s.bad("%s", msg)
	}
}

// tcpListen reports whether the API listens on TCP (a valid listen).
func tcpListen(d *Dispatcher) bool {
	return d.Listen != "" && hostPortProblem(d.Listen, 0) == ""
}

// tokenRequired: a TCP listener needs a token.
func tokenRequired(_ string, s *site) {
	d := &s.c.Dispatcher
	if tcpListen(d) && len(d.APITokens()) == 0 {
		s.bad("required when listen is set: TCP clients authenticate with a token (set token, token_file or [[dispatcher.tokens]]; local users can use the socket in state_dir instead)")
	}
}

// tlsOffLoopback: off loopback, TLS.
func tlsOffLoopback(v string, s *site) {
	d := &s.c.Dispatcher
	if v == "off" && tcpListen(d) && !isLoopback(d.Listen) {
		s.bad("plain HTTP off loopback would send tokens in clear: listen (%s) needs tls = \"auto\" or \"on\"", d.Listen)
	}
}

func tlsPair(key string, s *site) {
	if (s.c.Dispatcher.TLSCert == "") != (key == "") {
		s.bad("set both tls_cert and tls_key, or neither (a self-signed pair is made in state_dir)")
	}
}

// isLoopback reports whether a listen address only accepts local
// connections.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// apiTokenName: a name the actor "token:<name>" of events can carry, not
// taken by dispatcher.token nor by an earlier token.
func apiTokenName(v string, s *site) {
	d := &s.c.Dispatcher
	if !tokenName(v) {
		s.bad("must be 1 to 64 of A-Z a-z 0-9 _ . @ - (got %q)", v)
		return
	}
	if d.Token != "" && v == DefaultTokenName {
		s.bad("%q is the name of dispatcher.token; pick another", v)
		return
	}
	for j, t := range d.Tokens[:s.i] {
		if t.Name == v {
			s.bad("duplicate token name %q (also dispatcher.tokens[%d])", v, j)
			return
		}
	}
}

// tokenName is what a token's name may hold.
func tokenName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_.@-", c)
		if !ok {
			return false
		}
	}
	return true
}

// distinctSecret: each token needs its own secret.
func distinctSecret(v string, s *site) {
	if v == "" {
		return
	}
	d := &s.c.Dispatcher
	dup := v == d.Token
	for _, t := range d.Tokens[:s.i] {
		dup = dup || v == t.Token
	}
	if dup {
		s.bad("the same secret as another token: each token needs its own")
	}
}

// readTokens puts the contents of every token file in its token, after
// decoding: a token file is where its token's value comes from.
func (p *parser) readTokens(c *Config) {
	d := &c.Dispatcher
	p.readToken("dispatcher", &d.Token, &d.TokenFile)
	for i := range d.Tokens {
		k := fmt.Sprintf("dispatcher.tokens[%d]", i)
		t := &d.Tokens[i]
		if t.Token == "" && t.TokenFile == "" && !p.failed[k+".token"] && !p.failed[k+".token_file"] {
			p.fail(k+".token_file", "set token_file (or token)")
		}
		p.readToken(k, &t.Token, &t.TokenFile)
	}
}

// readToken reads a token from its file (section.token_file), if set.
func (p *parser) readToken(section string, tok, file *string) {
	switch {
	case *tok != "" && *file != "":
		p.fail(section+".token_file", "set token or token_file, not both")
	case *file != "" && !p.failed[section+".token_file"]:
		t, err := readSecretFile(*file, "token")
		if err != nil {
			p.fail(section+".token_file", "%v", err)
			p.failed[section+".token"] = true
		}
		*tok = t
	}
}

// maxTokenFile bounds what is read from token_file (or url_file).
const maxTokenFile = 64 << 10

// readSecretFile reads a secret (what: "token", "store URL") from a
// private file.
func readSecretFile(path, what string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", what, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("cannot read %s: %s is not a regular file", what, path)
	}
	if err := secretfile.Check(path, fi); err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", what, err)
	}
	if len(data) > maxTokenFile {
		return "", fmt.Errorf("cannot read %s: %s is larger than %s", what, path, view.FormatSize(maxTokenFile))
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("%s file %s is empty", what, path)
	}
	return tok, nil
}
