// Output cut to [containers] max_output: recorded on the container before
// it is stored and counted; view.TruncationNote is the line logs shows.

package engine

import (
	"fmt"

	"dispatch-tui/engine/queue"
)

// noteTruncations records on each container how much of the output about
// to be stored was cut (logs_truncated, 0 for none), and returns the
// outputs as the store keeps them. When a record changed it is flushed
// before the output is stored, so that a crash between the two never
// leaves a cut output whose record does not say so: the record may say so
// of an output not yet stored, which the next fetch of the same output
// makes true.
func (e *Engine) noteTruncations(ids []string, outputs []queue.StoredOutput) ([][]byte, error) {
	data := make([][]byte, len(ids))
	changed := false
	for i, id := range ids {
		data[i] = queue.EncodeOutput(outputs[i])
		if !e.queue.SetLogsTruncated(id, outputs[i].Dropped) {
			continue
		}
		changed = true
		if n := outputs[i].Dropped; n > 0 {
			e.output.truncated.Add(1)
			e.log.Info("container output truncated", "container", id, "dropped_bytes", n, "kept_bytes", len(outputs[i].Data))
		}
	}
	if !changed {
		return data, nil
	}
	if err := e.queue.Flush(); err != nil {
		return nil, fmt.Errorf("record truncated output: %w", err)
	}
	return data, nil
}
