// The shell lines the driver runs on a host, and reading the tags file they write.

package sshhosts

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
)

// The shell lines run on a host: fixed text plus quoted paths from the
// config, never user data; and reading the tags file they write.

// quote single-quotes s, which never contains a single quote.
func quote(s string) string { return "'" + s + "'" }

// file returns the quoted path of a file in the host's work directory.
func (h *Instance) file(name string) string {
	if h.workDir == "" {
		return quote(name)
	}
	return quote(h.workDir + "/" + name)
}

// runnerPrefix is put before every command the pool runs on the host (and
// runnerSuffix after it): with a work_dir, the command runs there, as a
// group, so that the cd guards all of it, with the runner's state dir
// exported.
func (h *Instance) runnerPrefix() string {
	if h.workDir == "" {
		return ""
	}
	dir := RunnerDir // relative work_dir: the runner makes it absolute after the cd
	if path.IsAbs(h.workDir) {
		dir = h.workDir + "/" + RunnerDir
	}
	return "cd " + quote(h.workDir) + " && export " + RunnerDirEnv + "=" + quote(dir) + " && { "
}

// runnerSuffix closes what runnerPrefix opened.
func (h *Instance) runnerSuffix() string {
	if h.workDir == "" {
		return ""
	}
	return "\n}"
}

// readTagsLine prints a line "tags" and the tags file if there is one, and
// nothing otherwise.
func (h *Instance) readTagsLine() string {
	f := h.file(TagsFile)
	return "if [ -e " + f + " ]; then echo " + tagsMarker + " && cat " + f + "; fi"
}

const tagsMarker = "tags"

// claimLine reads the secret (first line) and the tags (the rest) from
// stdin, creates the tags file only if there is none (a hard link of a
// complete temporary file, so that two claimers cannot both win and no
// reader sees a partial file), then writes the secret file. It exits
// exitTaken when the host already has a tags file.
func (h *Instance) claimLine() string {
	var rnd [6]byte
	rand.Read(rnd[:])
	tags, secret := h.file(TagsFile), h.file(SecretFile)
	tmp := h.file(TagsFile + ".claim-" + hex.EncodeToString(rnd[:]))
	stmp := h.file(SecretFile + ".tmp")
	var b strings.Builder
	if h.workDir != "" {
		b.WriteString("mkdir -p " + quote(h.workDir) + " && ")
	}
	b.WriteString("umask 077 && IFS= read -r s && cat > " + tmp + " && ")
	b.WriteString("if ln " + tmp + " " + tags + " 2>/dev/null; then rm -f " + tmp + "; ")
	b.WriteString("else rm -f " + tmp + "; if [ -e " + tags + " ]; then exit " + fmt.Sprint(exitTaken) + "; fi; ")
	b.WriteString("echo 'cannot create " + strings.Trim(tags, "'") + "' >&2; exit 1; fi && ")
	b.WriteString("if [ -n \"$s\" ]; then printf '%s\\n' \"$s\" > " + stmp + " && mv -f " + stmp + " " + secret + "; ")
	b.WriteString("else rm -f " + secret + "; fi")
	return b.String()
}

// setTagsLine replaces the tags file (which must exist: a released host is
// not re-claimed by a late tag update) from stdin; withSecret: the first
// line of stdin is the new secret.
func (h *Instance) setTagsLine(withSecret bool) string {
	tags, secret := h.file(TagsFile), h.file(SecretFile)
	tmp, stmp := h.file(TagsFile+".tmp"), h.file(SecretFile+".tmp")
	var b strings.Builder
	b.WriteString("umask 077 && if [ ! -e " + tags + " ]; then echo 'host released: no " + strings.Trim(tags, "'") + "' >&2; exit 3; fi && ")
	if withSecret {
		b.WriteString("IFS= read -r s && ")
	}
	b.WriteString("cat > " + tmp + " && mv -f " + tmp + " " + tags)
	if withSecret {
		b.WriteString(" && if [ -n \"$s\" ]; then printf '%s\\n' \"$s\" > " + stmp + " && mv -f " + stmp + " " + secret + "; ")
		b.WriteString("else rm -f " + secret + "; fi")
	}
	return b.String()
}

// releaseLine removes the tags file (which frees the host), then the secret.
func (h *Instance) releaseLine() string {
	return "rm -f " + h.file(TagsFile) + " " + h.file(SecretFile)
}

// claim runs claimLine with the secret and the tags' JSON.
func (h *Instance) claim(ctx context.Context, secret string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	stdin := append([]byte(secret+"\n"), body...)
	_, _, err := h.mgmt.Execute(ctx, h.claimLine(), stdin)
	var xe *runner.ExitError
	if errors.As(err, &xe) && xe.Code == exitTaken {
		return errTaken
	}
	return err
}

type parseError struct{ err error }

func (e *parseError) Error() string { return e.err.Error() }

// readTags returns the host's tags; found is false when it has no tags
// file. A tags file that is not a JSON object of strings is a *parseError.
func (h *Instance) readTags(ctx context.Context) (cloud.Tags, bool, error) {
	out, _, err := h.mgmt.Execute(ctx, h.readTagsLine(), nil)
	if err != nil {
		return nil, false, err
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, false, nil
	}
	body, ok := bytes.CutPrefix(out, []byte(tagsMarker+"\n"))
	if !ok {
		return nil, false, fmt.Errorf("reading %s: unexpected output %q", TagsFile, truncate(out, 80))
	}
	var tags cloud.Tags
	if err := json.Unmarshal(body, &tags); err != nil {
		return nil, false, &parseError{fmt.Errorf("%s: %w", TagsFile, err)}
	}
	if tags == nil {
		tags = cloud.Tags{}
	}
	return tags, true, nil
}

func tagsJSON(tags cloud.Tags) ([]byte, error) {
	if tags == nil {
		tags = cloud.Tags{}
	}
	b, err := json.Marshal(tags)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
