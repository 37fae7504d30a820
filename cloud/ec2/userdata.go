// The user-data script an instance boots with, and reading its variables back.

package ec2

import (
	"bytes"
	"strings"

	"golang.org/x/crypto/ssh"
)

// User-data variables: the first lines of the script set them, so that
// anyone (an operator, a test endpoint) can read what an instance was
// given without running the script.
const (
	UserDataVarUser   = "DISPATCH_TUI_USER"
	UserDataVarKey    = "DISPATCH_TUI_AUTHORIZED_KEY"
	UserDataVarSecret = "DISPATCH_TUI_SECRET"
)

// SecretFile is where user-data writes the instance's secret, relative to
// the admin user's home: what the executor's secret check reads
// (sshexec.DefaultSecretCommand).
const SecretFile = ".dispatch-tui-secret"

// UserData is the cloud-init script a new instance runs as root at first
// boot: it creates the admin user if the image lacks it, sets up the
// scratch volume if there is one (scratch.go), authorizes the
// dispatcher's key for the user and writes the instance's secret to its
// home. The values are single-quoted: callers ensure they hold no quote.
func UserData(user string, key ssh.PublicKey, secret string, scratch Scratch) []byte {
	var b bytes.Buffer
	b.WriteString("#!/bin/sh\n# dispatch-tui instance setup: run once by cloud-init, as root.\n")
	b.WriteString(UserDataVarUser + "='" + user + "'\n")
	b.WriteString(UserDataVarKey + "='" + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))) + "'\n")
	b.WriteString(UserDataVarSecret + "='" + secret + "'\n")
	if scratch.Bytes > 0 {
		b.WriteString(scratchVars(scratch))
	}
	b.WriteString(`set -eu
if ! id "$DISPATCH_TUI_USER" >/dev/null 2>&1; then
	useradd --create-home --shell /bin/sh "$DISPATCH_TUI_USER"
fi
`)
	if scratch.Bytes > 0 {
		// Before the key: an instance without its scratch never
		// becomes ready.
		b.WriteString(ScratchScript)
	}
	b.WriteString(`home=$(getent passwd "$DISPATCH_TUI_USER" | cut -d: -f6)
group=$(id -gn "$DISPATCH_TUI_USER")
umask 077
mkdir -p "$home/.ssh"
printf '%s\n' "$DISPATCH_TUI_AUTHORIZED_KEY" >>"$home/.ssh/authorized_keys"
printf '%s\n' "$DISPATCH_TUI_SECRET" >"$home/` + SecretFile + `"
chown "$DISPATCH_TUI_USER:$group" "$home/.ssh" "$home/.ssh/authorized_keys" "$home/` + SecretFile + `"
`)
	return b.Bytes()
}

// ParseUserData returns the variables UserData set in script (user, key
// and secret); ok is false if any is missing.
func ParseUserData(script []byte) (user, authorizedKey, secret string, ok bool) {
	vals := map[string]string{}
	for _, line := range strings.Split(string(script), "\n") {
		name, rest, found := strings.Cut(line, "='")
		if !found || !strings.HasSuffix(rest, "'") {
			continue
		}
		vals[name] = strings.TrimSuffix(rest, "'")
	}
	user, okU := vals[UserDataVarUser]
	authorizedKey, okK := vals[UserDataVarKey]
	secret, okS := vals[UserDataVarSecret]
	return user, authorizedKey, secret, okU && okK && okS
}
