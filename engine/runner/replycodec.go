// Decoding the replies of a batch or serve call, with a fast path for lists.

package runner

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// decodeReplies reads the replies a batch or serve call wrote, as a
// json.Decoder reading values while More() holds would. A reply is mostly
// a list's output, base64 in a JSON string: a line in the shape the runner
// writes (parseReplyFast) is decoded without encoding/json's scanner and
// reflection, anything else by encoding/json.
func decodeReplies(out []byte, want int) ([]Reply, error) {
	replies := make([]Reply, 0, want)
	rest := out
	for {
		rest = bytes.TrimLeft(rest, " \t\r\n") // JSON's white space
		if len(rest) == 0 || rest[0] == ']' || rest[0] == '}' {
			break // where json.Decoder.More() says there is no more
		}
		replies = append(replies, Reply{})
		r := &replies[len(replies)-1]
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i]
		}
		if parseReplyFast(line, r) {
			rest = rest[len(line):]
			continue
		}
		*r = Reply{}
		dec := json.NewDecoder(bytes.NewReader(rest))
		if err := dec.Decode(r); err != nil {
			return nil, fmt.Errorf("runner batch: reply %d: %w", len(replies), err)
		}
		rest = rest[dec.InputOffset():]
	}
	return replies, nil
}

// parseReplyFast parses line when it is exactly what the runner's
// json.Encoder writes for a Reply ({"code":N} with "stdout", "stderr" and
// "dropped" after it when set, no escapes, no white space), and reports
// whether it did. What it accepts json.Unmarshal decodes the same way
// (TestParseReplyFast, FuzzParseReplyFast).
func parseReplyFast(line []byte, r *Reply) bool {
	p := listParser{b: line}
	if !p.lit(`{"code":`) || !p.int(&r.Code) {
		return false
	}
	if p.lit(`,"stdout":"`) {
		end := 0
		for end < len(p.b) && base64Byte(p.b[end]) {
			end++
		}
		if end == len(p.b) || p.b[end] != '"' {
			return false
		}
		// As encoding/json decodes a []byte.
		b := make([]byte, base64.StdEncoding.DecodedLen(end))
		n, err := base64.StdEncoding.Decode(b, p.b[:end])
		if err != nil {
			return false
		}
		r.Stdout = b[:n]
		p.b = p.b[end+1:]
	}
	if p.lit(`,"stderr":`) {
		var s []byte
		if !p.str(&s) {
			return false
		}
		r.Stderr = string(s)
	}
	if p.lit(`,"dropped":`) {
		var n int
		if !p.int(&n) {
			return false
		}
		r.Dropped = int64(n)
	}
	return p.lit("}") && len(p.b) == 0
}

func base64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}
