// What a user submits: a container's spec, as the API, its client and the
// CLI send it.

package view

// Spec is a submit request (POST /v1/containers). The engine checks it
// (queue.ValidateSpec) and fills what it leaves out from the config.
type Spec struct {
	Name               string            `json:"name"`
	Command            []string          `json:"command"`
	Env                map[string]string `json:"env,omitempty"`
	Image              string            `json:"image,omitempty"`
	Labels             map[string]string `json:"labels,omitempty"` // free metadata
	RuntimeConstraints Constraints       `json:"runtime_constraints"`
	Scheduling         Scheduling        `json:"scheduling"`
	Priority           *int              `json:"priority,omitempty"` // nil = 1
	MaxAttempts        int               `json:"max_attempts"`       // 0 = config default
	RestartPolicy      string            `json:"restart_policy"`     // "" = never
	HealthCheck        *HealthCheck      `json:"health_check,omitempty"`
}
