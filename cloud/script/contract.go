// Package script is the cloud driver that runs the operator's own commands
// (docs/design.md §8): create, list, destroy and optionally set_tags, each
// an argv run without a shell, with JSON on stdin and on stdout, as Slurm's
// ResumeProgram and SuspendProgram do. This file is the contract the
// commands follow, spelled once; README.md documents it for operators.
package script

import "dispatch-tui/cloud"

// Verbs: the commands of [cloud.script], by the key that names each.
const (
	VerbCreate  = "create"
	VerbList    = "list"
	VerbDestroy = "destroy"
	VerbSetTags = "set_tags"
)

// Exit statuses a command uses to say which kind of refusal it met, so
// that the worker pool reacts as it does for a built-in driver. Any other
// non-zero status is a plain error showing the command's last stderr line.
const (
	ExitCapacityType = 10 // no capacity for the requested provider type (create)
	ExitCapacityAll  = 11 // no capacity for any type
	ExitQuota        = 12 // an account quota is used up
	ExitRateLimit    = 13 // throttled: see RetryAfterPrefix
	ExitPermanent    = 14 // retrying will not help (bad config, auth): an operator has to act
	// A shell's own statuses for a command it could not find or run
	// (a missing CLI, a script without its x bit): permanent too.
	exitShellCannotRun = 126
	exitShellNotFound  = 127
)

// RetryAfterPrefix starts the stderr line by which a rate-limited command
// (ExitRateLimit) says when to call again: "retry-after: 30" (seconds) or
// "retry-after: 2m" (a Go duration). Without one, DefaultRetryAfter.
const RetryAfterPrefix = "retry-after:"

// Environment variables the driver sets for every command, besides the
// ones [cloud.script] env lists.
const (
	EnvVerb    = "DISPATCH_TUI_VERB"    // create, list, destroy or set_tags
	EnvTimeout = "DISPATCH_TUI_TIMEOUT" // whole seconds the command has before it is killed
)

// States a list line may report besides a live one (any other word, or
// none, is a live instance).
const (
	StateTerminated = "terminated" // gone: left out of the listing
	StatePreempted  = "preempted"  // taken back by the provider (spot): containers are requeued
)

// createInput is what create reads on stdin.
type createInput struct {
	Type         string             `json:"type"`
	InstanceType cloud.InstanceType `json:"instance_type"`
	Tags         cloud.Tags         `json:"tags"`
	PublicKey    string             `json:"public_key"`
	// UserData is the first-boot script that authorizes PublicKey for
	// the admin user and writes the instance's secret (the EC2 driver's).
	UserData string `json:"user_data"`
}

// createOutput is what create prints on stdout.
type createOutput struct {
	ID           string `json:"id"`
	Address      string `json:"address"`
	ProviderType string `json:"provider_type"`
}

// instanceInput is what destroy and set_tags read on stdin.
type instanceInput struct {
	ID   string     `json:"id"`
	Tags cloud.Tags `json:"tags"`
}

// listInput is what list reads on stdin: the owner tag key every listed
// instance must carry, with the value it must have ("" = any owner's).
type listInput struct {
	OwnerTag map[string]string `json:"owner_tag"`
}

// listLine is one line list prints on stdout, an instance each.
type listLine struct {
	ID           string     `json:"id"`
	Address      string     `json:"address"`
	Tags         cloud.Tags `json:"tags"`
	State        string     `json:"state"`
	ProviderType string     `json:"provider_type"`
}
