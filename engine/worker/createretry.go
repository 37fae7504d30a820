// Retried creates (docs/design.md §8): a create whose outcome the pool
// cannot know is retried with the same tags, so that a driver deriving its
// idempotency token from the instance's secret gets the same instance.

package worker

import (
	"time"

	"dispatch-tui/cloud"
)

// createRetryWindow bounds how long the tags of a create that failed
// without saying whether it made an instance are kept for the next create
// of its type. A retry after it gets new tags: by then the listing has
// found the instance if there was one, and it is adopted.
const createRetryWindow = 10 * time.Minute

// retryCreate is the tags of a create whose outcome is unknown.
type retryCreate struct {
	tags cloud.Tags
	at   time.Time
}

// createOutcomeUnknown reports whether a failed create may still have made
// an instance: every error the driver did not classify (a timeout, a lost
// answer, a 5xx). A quota, capacity, rate-limit or permanent error is the
// provider's refusal, and nothing was made.
func createOutcomeUnknown(err error) bool {
	return cloud.ErrorKind(err) == "other"
}

// takeRetryTagsLocked returns, and forgets, the tags kept for a retry of
// a create of type name; nil when there are none or they are too old.
func (p *Pool) takeRetryTagsLocked(name string, now time.Time) cloud.Tags {
	r, ok := p.retryCreates[name]
	if !ok {
		return nil
	}
	delete(p.retryCreates, name)
	if now.Sub(r.at) >= createRetryWindow {
		return nil
	}
	return r.tags
}

// keepRetryTagsLocked keeps the tags of a create of type name that failed
// with err, when its outcome is unknown, for the next create of that type.
func (p *Pool) keepRetryTagsLocked(name string, tags cloud.Tags, err error, now time.Time) {
	if tags == nil || !createOutcomeUnknown(err) {
		return
	}
	at := now
	if r, ok := p.retryCreates[name]; ok && r.tags[cloud.TagSecret] == tags[cloud.TagSecret] {
		at = r.at // the window counts from the first try
	}
	if p.retryCreates == nil {
		p.retryCreates = make(map[string]retryCreate)
	}
	p.retryCreates[name] = retryCreate{tags: tags, at: at}
}

// adoptedRetryLocked forgets kept tags whose instance a listing found:
// the create did make it, and it is adopted.
func (p *Pool) adoptedRetryLocked(tags cloud.Tags) {
	secret := tags[cloud.TagSecret]
	if secret == "" {
		return
	}
	for name, r := range p.retryCreates {
		if r.tags[cloud.TagSecret] == secret {
			delete(p.retryCreates, name)
		}
	}
}
