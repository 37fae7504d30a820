// submit: a container's spec from flags or from files, sent to the daemon.

package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/view"
)

// sizeValue is a --ram/--scratch flag: "2GiB", "512MiB", bytes.
type sizeValue struct{ v *int64 }

func (s sizeValue) String() string {
	if *s.v == 0 {
		return ""
	}
	return view.FormatSize(*s.v)
}
func (s sizeValue) Type() string { return "size" }
func (s sizeValue) Set(v string) error {
	n, err := view.ParseSize(v)
	if err != nil {
		return err
	}
	// "--ram 512" is 512 bytes, which no one means: below 1 MiB a unit
	// must say so.
	if n > 0 && n < 1<<20 && strings.TrimLeft(strings.TrimSpace(v), "0123456789") == "" {
		return fmt.Errorf("%s without a unit is %s bytes: write %sMiB, %sGiB or %sB", v, v, v, v, v)
	}
	*s.v = n
	return nil
}

// submitFlags are submit's flags beyond what view.Spec holds directly.
type submitFlags struct {
	spec           view.Spec
	priority       int
	maxRun         time.Duration
	env, labels    []string
	constraints    []string
	supervisor     bool
	preemptible    bool
	healthCmd      string
	healthInterval time.Duration
	healthTimeout  time.Duration
	healthRetries  int
	file           string
}

// specFlags are the flags that describe one spec: -f takes none of them.
var specFlags = []string{"vcpus", "ram", "scratch", "gpus", "priority", "max-attempts", "restart", "name", "image",
	"max-run-time", "env", "label", "constraint", "supervisor", "preemptible", "health-cmd", "health-interval", "health-timeout", "health-retries"}

func submitCmd(env *Env) *cobra.Command {
	sf := &submitFlags{}
	cmd := &cobra.Command{
		Use:   "submit [flags] -- CMD ARGS... | submit -f FILE",
		Short: "Submit containers; print their ids",
		Long: `Submit a container running CMD ARGS, or (-f) the specs in FILE: one JSON
object a line, or a YAML or JSON list of specs (the API's spec objects). The new
ids are printed one a line on stdout. Specs from a file are checked before any is
sent.`,
		Example: `  dispatch-tui submit --vcpus 2 --ram 4GiB --name align -- sh -c 'align ref.fa reads.fq'
  dispatch-tui submit --label team=genomics --preemptible --restart on-failure -- ./job.sh
  dispatch-tui submit --constraint gpu=a100 --gpus 1 -- ./train.sh
  dispatch-tui submit --health-cmd 'curl -fs localhost:8080/health' --health-interval 30s -- ./server
  dispatch-tui submit -f specs.jsonl
  generate-specs | dispatch-tui submit -f -`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			specs, err := sf.specs(cmd.Flags(), args, env)
			if err != nil {
				return err
			}
			c, err := client(env)
			if err != nil {
				return err
			}
			return submitSpecs(cmd.Context(), c, specs, env.Stdout)
		},
	}
	f := cmd.Flags()
	s := &sf.spec
	f.IntVar(&s.RuntimeConstraints.VCPUs, "vcpus", queue.DefaultVCPUs, "vCPUs")
	f.Var(sizeValue{&s.RuntimeConstraints.RAM}, "ram", "RAM, e.g. 2GiB")
	f.Var(sizeValue{&s.RuntimeConstraints.Scratch}, "scratch", "scratch disk, e.g. 10GiB")
	f.IntVar(&s.RuntimeConstraints.GPUs, "gpus", 0, "GPUs")
	f.IntVar(&sf.priority, "priority", 1, "priority (higher first; 0 = do not schedule)")
	f.IntVar(&s.MaxAttempts, "max-attempts", 0, "attempts before giving up (0 = config default)")
	f.StringVar(&s.RestartPolicy, "restart", "never", "restart policy: never or on-failure")
	f.StringVar(&s.Name, "name", "", "name")
	f.StringVar(&s.Image, "image", "", "container image (runs with docker)")
	f.DurationVar(&sf.maxRun, "max-run-time", 0, "kill the container after this long (0 = no limit)")
	f.StringArrayVar(&sf.env, "env", nil, "environment variable `K=V` (repeatable)")
	f.StringArrayVar(&sf.labels, "label", nil, "label `KEY=VALUE`: free metadata (repeatable; ls containers -l and kill -l select by it)")
	f.StringArrayVar(&sf.constraints, "constraint", nil, "placement `KEY=VALUE`: only on instance types with this label (repeatable)")
	f.BoolVar(&sf.supervisor, "supervisor", false, "the container supervises others (scheduling.supervisor)")
	f.BoolVar(&sf.preemptible, "preemptible", false, "may run on preemptible instances (--preemptible=false forbids; unset = the server's default)")
	f.StringVar(&sf.healthCmd, "health-cmd", "", "health check: run `CMD` with sh -c in the container; non-zero = unhealthy")
	f.DurationVar(&sf.healthInterval, "health-interval", 0, "time between health checks (0 = server default)")
	f.DurationVar(&sf.healthTimeout, "health-timeout", 0, "time a health check may take (0 = server default)")
	f.IntVar(&sf.healthRetries, "health-retries", 0, "failed checks in a row before unhealthy (0 = server default)")
	f.StringVarP(&sf.file, "file", "f", "", "submit the specs in `FILE` (- = stdin): JSON lines, or a YAML or JSON list")
	cmd.RegisterFlagCompletionFunc("restart", fixedCompletion(queue.RestartNever, queue.RestartOnFailure))
	return cmd
}

// specs builds the specs to submit from the flags and args, or from -f.
func (sf *submitFlags) specs(fs *pflag.FlagSet, args []string, env *Env) ([]json.RawMessage, error) {
	if sf.file != "" {
		for _, name := range specFlags {
			if fs.Changed(name) {
				return nil, usagef("--%s describes one container: put it in the specs of -f instead", name)
			}
		}
		if len(args) != 0 {
			return nil, usagef("-f takes no command; got %q", args[0])
		}
		return readSpecs(sf.file, env)
	}
	spec, err := sf.build(fs, args)
	if err != nil {
		return nil, err
	}
	return []json.RawMessage{spec}, nil
}

// build is the one spec the flags describe, encoded for the API.
func (sf *submitFlags) build(fs *pflag.FlagSet, args []string) (json.RawMessage, error) {
	spec := sf.spec
	spec.Command = args
	if len(spec.Command) == 0 {
		return nil, usagef("no command: dispatch-tui submit [flags] -- CMD ARGS... (or -f FILE)")
	}
	if sf.priority < 0 {
		return nil, usagef("--priority must not be negative")
	}
	spec.Priority = &sf.priority
	spec.Scheduling.MaxRunTime = queue.Duration(sf.maxRun)
	var err error
	if spec.Env, err = keyValues("--env", sf.env); err != nil {
		return nil, err
	}
	if spec.Labels, err = keyValues("--label", sf.labels); err != nil {
		return nil, err
	}
	if spec.Scheduling.Constraints, err = keyValues("--constraint", sf.constraints); err != nil {
		return nil, err
	}
	if err := queue.ValidateSpec(&spec); err != nil {
		return nil, usagef("%v", err)
	}
	// view.Spec holds what the server knew when this client was built;
	// the newer fields go into the JSON object directly.
	var obj map[string]any
	b, _ := json.Marshal(spec)
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	sched, _ := obj["scheduling"].(map[string]any)
	delete(sched, "preemptible") // sent only when given
	if fs.Changed("preemptible") {
		sched["preemptible"] = sf.preemptible
	}
	if sf.supervisor {
		sched["supervisor"] = true
	}
	health := fs.Changed("health-interval") || fs.Changed("health-timeout") || fs.Changed("health-retries")
	switch {
	case sf.healthCmd != "":
		hc := map[string]any{"command": []string{"sh", "-c", sf.healthCmd}}
		if sf.healthInterval < 0 || sf.healthTimeout < 0 || sf.healthRetries < 0 {
			return nil, usagef("--health-interval, --health-timeout and --health-retries must not be negative")
		}
		if sf.healthInterval > 0 {
			hc["interval"] = sf.healthInterval.String()
		}
		if sf.healthTimeout > 0 {
			hc["timeout"] = sf.healthTimeout.String()
		}
		if sf.healthRetries > 0 {
			hc["retries"] = sf.healthRetries
		}
		obj["health_check"] = hc
	case health:
		return nil, usagef("--health-interval, --health-timeout and --health-retries need --health-cmd")
	}
	return json.Marshal(obj)
}

// keyValues parses repeated K=V flags.
func keyValues(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("%s wants K=V, got %q", flag, kv)
		}
		m[k] = v
	}
	return m, nil
}

// readSpecs reads the specs of submit -f: JSON lines, or a YAML or JSON
// list (a single object is one spec). Each is checked before any is sent.
func readSpecs(name string, env *Env) ([]json.RawMessage, error) {
	var data []byte
	var err error
	if name == "-" {
		in := env.Stdin
		if in == nil {
			in = os.Stdin
		}
		data, err = io.ReadAll(in)
		name = "stdin"
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read specs: %w", err)
	}
	var specs []json.RawMessage
	if t := bytes.TrimSpace(data); bytes.HasPrefix(t, []byte("{")) {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), api.MaxBodyBytes)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			if !json.Valid(line) || line[0] != '{' {
				return nil, usagef("%s:%d: not a JSON object (JSON lines: one spec a line)", name, n)
			}
			specs = append(specs, append(json.RawMessage(nil), line...))
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read specs: %w", err)
		}
	} else {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, usagef("%s: %v", name, err)
		}
		if err := json.Unmarshal(j, &specs); err != nil {
			return nil, usagef("%s: want a list of specs: %v", name, err)
		}
	}
	if len(specs) == 0 {
		return nil, usagef("%s: no specs", name)
	}
	// Every spec is checked, as the server would (unknown fields named),
	// and every refusal reported, not only the first.
	var bad []string
	for i, raw := range specs {
		raw, err := sizesInBytes(raw)
		if err == nil {
			_, err = api.DecodeSpec(raw)
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("spec %d: %v", i+1, err))
			continue
		}
		specs[i] = raw
	}
	switch {
	case len(bad) == 1:
		return nil, usagef("%s: %s", name, bad[0])
	case len(bad) > 1:
		return nil, usagef("%s: %d specs refused, none sent:\n  %s", name, len(bad), strings.Join(bad, "\n  "))
	}
	return specs, nil
}

// sizesInBytes turns runtime_constraints.ram and scratch given as sizes
// with units ("2GiB", as flags and the config take them) into the bytes
// the API takes; a spec without such strings is returned as it is.
func sizesInBytes(raw json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return raw, nil // not an object: DecodeSpec says so
	}
	var rc map[string]json.RawMessage
	if json.Unmarshal(obj["runtime_constraints"], &rc) != nil {
		return raw, nil
	}
	changed := false
	for _, k := range []string{"ram", "scratch"} {
		var s string
		if json.Unmarshal(rc[k], &s) != nil {
			continue
		}
		n, err := view.ParseSize(s)
		if err != nil {
			return nil, fmt.Errorf("runtime_constraints.%s: %v", k, err)
		}
		rc[k] = json.RawMessage(strconv.FormatInt(n, 10))
		changed = true
	}
	if !changed {
		return raw, nil
	}
	obj["runtime_constraints"], _ = json.Marshal(rc)
	return json.Marshal(obj)
}

// submitSpecs sends specs to the dispatcher and prints the new ids, one a
// line. One spec is one request; several go as bulk submissions, each
// stored all or nothing and as large as the server takes (api.MaxBatchItems
// specs, api.MaxBodyBytes). A refused batch stops the run: the ids printed
// before it were submitted, nothing of it or after it was.
func submitSpecs(ctx context.Context, c *api.Client, specs []json.RawMessage, stdout io.Writer) error {
	if len(specs) == 1 {
		got, err := c.SubmitJSON(ctx, specs[0])
		if err != nil {
			return explain(c, err)
		}
		fmt.Fprintln(stdout, termsafe.Escape(got.ID))
		return nil
	}
	done := 0
	for _, batch := range batches(specs, api.MaxBatchItems, api.MaxBodyBytes) {
		got, err := c.SubmitBatchJSON(ctx, batch)
		if err != nil {
			err = explainBatch(c, err, done)
			if done > 0 || len(batch) < len(specs) {
				return fmt.Errorf("specs %d-%d of %d refused (%d submitted before them, nothing after): %w",
					done+1, done+len(batch), len(specs), done, err)
			}
			return err
		}
		for _, ct := range got {
			fmt.Fprintln(stdout, termsafe.Escape(ct.ID))
		}
		done += len(batch)
	}
	return nil
}

// batches splits specs into runs of at most maxItems whose JSON array
// stays under maxBytes (a spec larger than that goes alone, for the
// server to refuse with 413).
func batches(specs []json.RawMessage, maxItems, maxBytes int) [][]json.RawMessage {
	var out [][]json.RawMessage
	start, size := 0, 2 // "[" and "]"
	for i, s := range specs {
		n := len(s) + 1 // and its comma
		if i > start && (i-start == maxItems || size+n > maxBytes) {
			out = append(out, specs[start:i])
			start, size = i, 2
		}
		size += n
	}
	if start < len(specs) {
		out = append(out, specs[start:])
	}
	return out
}

// explainBatch is explain for a refused bulk submission: the server names
// each refused item by its index in the batch, which done (the specs of
// earlier batches) turns into its place in the file, one a line.
func explainBatch(c *api.Client, err error, done int) error {
	var ae *api.APIError
	if !errors.As(err, &ae) || len(ae.Items) == 0 {
		return explain(c, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of the specs refused, nothing of this batch submitted:", len(ae.Items))
	for _, it := range ae.Items {
		fmt.Fprintf(&b, "\n  spec %d: %s", done+it.Index+1, it.Message)
	}
	return errors.New(b.String())
}
