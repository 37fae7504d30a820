// The spot interruption notice: the command that reads it on the instance, and its parser.

package ec2

// The two-minute spot interruption notice (cloud.NoticeReader): EC2 posts
// it in the instance's metadata service (spot/instance-action) before it
// reclaims a spot instance; the pool reads it over SSH with its probes.

import (
	"bytes"
	"encoding/json"
	"time"
)

// IMDSEndpointEnv names an environment variable of the instance's login
// sessions that replaces the metadata service's address: only ec2test sets
// it, its instances sharing one host.
const IMDSEndpointEnv = "DISPATCH_TUI_IMDS_ENDPOINT"

// noticeCommand prints the spot instance-action document, and nothing while
// EC2 has posted none (404) or the metadata service cannot be read (an
// image without curl): reading the notice must never fail a probe. IMDSv2:
// a session token first, as the instances require.
const noticeCommand = `m=${` + IMDSEndpointEnv + `:-http://169.254.169.254}; ` +
	`t=$(curl -sf -m 2 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' "$m/latest/api/token") || exit 0; ` +
	`curl -sf -m 2 -H "X-aws-ec2-metadata-token: $t" "$m/latest/meta-data/spot/instance-action" || true`

// NoticeCommand is the command that reads the spot notice; "" for an
// on-demand instance, which gets none.
func (i *Instance) NoticeCommand() string {
	if !i.Spot() {
		return ""
	}
	return noticeCommand
}

// ParseNotice reads the instance-action document: {"action": "terminate",
// "time": "2026-03-01T12:02:00Z"}.
func (i *Instance) ParseNotice(out []byte) (why string, at time.Time, ok bool) {
	var doc struct {
		Action string `json:"action"`
		Time   string `json:"time"`
	}
	out = bytes.TrimSpace(out)
	if len(out) == 0 || json.Unmarshal(out, &doc) != nil || doc.Action == "" {
		return "", time.Time{}, false
	}
	why = "EC2 spot interruption notice: " + doc.Action
	if t, err := time.Parse(time.RFC3339, doc.Time); err == nil {
		at = t
		why += " at " + t.UTC().Format(time.RFC3339)
	}
	return why, at, true
}
