package ec2

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// EC2's description of an instance says when it is a spot instance being
// reclaimed; nothing else counts as an interruption.
func TestInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spot   bool
		state  types.InstanceStateName
		reason string
		want   bool
	}{
		{"spot reclaimed, shutting down", true, types.InstanceStateNameShuttingDown, "Server.SpotInstanceTermination", true},
		{"spot reclaimed, stopped", true, types.InstanceStateNameStopped, "Server.SpotInstanceTermination", true},
		{"spot running", true, types.InstanceStateNameRunning, "", false},
		{"spot terminated by a user", true, types.InstanceStateNameShuttingDown, "Client.UserInitiatedShutdown", false},
		{"on demand shutting down", false, types.InstanceStateNameShuttingDown, "Server.SpotInstanceTermination", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			li := types.Instance{InstanceId: aws.String("i-1"), State: &types.InstanceState{Name: tc.state}}
			if tc.spot {
				li.InstanceLifecycle = types.InstanceLifecycleTypeSpot
			}
			if tc.reason != "" {
				li.StateReason = &types.StateReason{Code: aws.String(tc.reason)}
			}
			inst := (&Driver{}).newInstance(li)
			why, ok := inst.Interrupted()
			if ok != tc.want || ok && why == "" {
				t.Fatalf("Interrupted() = %q, %v; want %v", why, ok, tc.want)
			}
		})
	}
}
