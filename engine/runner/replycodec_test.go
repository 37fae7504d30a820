package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// encodeReplies writes replies as the runner does: encoding/json's
// Encoder, one a line.
func encodeReplies(replies []Reply) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range replies {
		enc.Encode(&replies[i])
	}
	return buf.Bytes()
}

// decodeRepliesJSON is how Client.Batch read replies before
// decodeReplies: a json.Decoder while More().
func decodeRepliesJSON(out []byte) ([]Reply, error) {
	var replies []Reply
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var r Reply
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("runner batch: reply %d: %w", len(replies)+1, err)
		}
		replies = append(replies, r)
	}
	return replies, nil
}

func randReply(r *rand.Rand) Reply {
	var rep Reply
	switch r.IntN(5) {
	case 0:
	case 1:
		rep.Stdout = []byte{}
	case 2:
		rep.Stdout, _ = encodeList(benchStatuses(1 + r.IntN(5)))
	default:
		rep.Stdout = make([]byte, r.IntN(40))
		for i := range rep.Stdout {
			rep.Stdout[i] = byte(r.IntN(256))
		}
	}
	rep.Code = []int{0, 0, 1, 2, -1, 1 << 40}[r.IntN(6)]
	rep.Stderr = []string{"", "", "runner kill: no such container", "a\"b", "<x>", "é", "\x00"}[r.IntN(7)]
	rep.Dropped = []int64{0, 0, 1024, 1 << 40}[r.IntN(4)]
	return rep
}

// checkReplyFast fails t when parseReplyFast accepts line and
// json.Unmarshal does not, or decodes it differently.
func checkReplyFast(t *testing.T, line []byte) bool {
	t.Helper()
	return checkAgainstJSON(t, line, parseReplyFast)
}

// checkDecodeReplies fails t when decodeReplies and the json.Decoder
// loop disagree on out: both fail, or both return the same replies.
func checkDecodeReplies(t *testing.T, out []byte) {
	t.Helper()
	want, werr := decodeRepliesJSON(out)
	got, gerr := decodeReplies(out, 0)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%q: error %v, json.Decoder's %v", out, gerr, werr)
	}
	if werr == nil && (len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want)) {
		t.Fatalf("%q:\n got %+v\nwant %+v", out, got, want)
	}
}

// TestParseReplyFast: on the replies a runner writes and on mutations of
// them, parseReplyFast agrees with encoding/json whenever it answers, and
// decodeReplies with the json.Decoder loop it replaces.
func TestParseReplyFast(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	took, mutated := 0, 0
	for range 2000 {
		replies := make([]Reply, 1+r.IntN(3))
		for i := range replies {
			replies[i] = randReply(r)
		}
		out := encodeReplies(replies)
		checkDecodeReplies(t, out)
		lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
		for i, line := range lines {
			plain := replies[i].Stderr == "" || replies[i].Stderr == "runner kill: no such container"
			if checkReplyFast(t, line) {
				took++
			} else if plain {
				t.Fatalf("fast path refused a runner's reply %q", line)
			}
			for range 5 {
				m := line
				for range 1 + r.IntN(3) {
					m = mutate(r, m)
					if checkReplyFast(t, m) {
						mutated++
					}
				}
			}
		}
		for range 5 {
			m := out
			for range 1 + r.IntN(3) {
				m = mutate(r, m)
			}
			checkDecodeReplies(t, m)
		}
	}
	if took == 0 || mutated == 0 {
		t.Fatalf("fast path took %d replies and %d mutated ones", took, mutated)
	}
	t.Logf("fast path took %d replies, %d mutated ones", took, mutated)
	for _, out := range []string{"", " \n", "{\"code\":0}{\"code\":1}\n", "{\"code\":0}\n]junk", "{\"code\":0} \n}", "null\n", "{\"code\":0}\r\n{\"code\":3,\"stdout\":\"\"}"} {
		checkDecodeReplies(t, []byte(out))
	}
}
