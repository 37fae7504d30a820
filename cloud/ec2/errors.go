// EC2's error codes mapped onto the worker pool's kinds of failure.

package ec2

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/smithy-go"

	"dispatch-tui/cloud"
)

// EC2 error codes, by what they mean to the worker pool.
var (
	// capacityCodes: no capacity for the type in this AZ; another subnet
	// (AZ) may have it.
	capacityCodes = codeSet("InsufficientInstanceCapacity", "InsufficientHostCapacity",
		"InsufficientReservedInstanceCapacity", "InsufficientCapacityOnHost", "Unsupported")
	// subnetCodes: this subnet cannot take an instance; another may.
	subnetCodes = codeSet("InsufficientFreeAddressesInSubnet", "InvalidSubnetID.NotFound", "InvalidSubnet",
		"InsufficientVolumeCapacity")
	quotaCodes = codeSet("InstanceLimitExceeded", "VcpuLimitExceeded", "MaxSpotInstanceCountExceeded",
		"InsufficientAddressCapacity")
	throttleCodes = codeSet("RequestLimitExceeded", "Throttling", "ThrottlingException",
		"EC2ThrottledException", "RequestThrottled")
	// permanentCodes will fail the same way until an operator changes the
	// configuration or the account's permissions: never retried soon.
	permanentCodes = codeSet("UnauthorizedOperation", "AuthFailure", "InvalidClientTokenId",
		"SignatureDoesNotMatch", "OptInRequired", "Blocked", "PendingVerification",
		"InvalidAMIID.NotFound", "InvalidAMIID.Malformed", "InvalidAMIID.Unavailable",
		"InvalidGroup.NotFound", "InvalidGroupId.Malformed", "InvalidKeyPair.NotFound",
		"InvalidParameterValue", "InvalidParameterCombination", "InvalidParameter",
		"MissingParameter", "InvalidInstanceType", "InvalidParameterValue.InstanceType",
		"InvalidBlockDeviceMapping", "InvalidIamInstanceProfile.NotFound",
		// A client token reused for another request (a pool retry across a
		// config change): the same request would be refused again.
		"IdempotentParameterMismatch")
)

func codeSet(codes ...string) map[string]bool {
	m := make(map[string]bool, len(codes))
	for _, c := range codes {
		m[c] = true
	}
	return m
}

// launchFailureCodes are the StateReason codes of an instance EC2 ended
// during its launch, after RunInstances succeeded.
var launchFailureCodes = codeSet("Server.InsufficientInstanceCapacity", "Server.InternalError",
	"Client.InternalError", "Client.VolumeLimitExceeded", "Client.InvalidSnapshot.NotFound")

// launchError is the pool's error for an instance EC2 ended during its
// launch with StateReason code and message: the create that made it
// failed after all.
func launchError(id cloud.InstanceID, providerType, code, message string) error {
	if message == "" {
		message = code
	}
	err := fmt.Errorf("ec2 instance %s (%s) ended during its launch: %s", id, providerType, message)
	switch code {
	case "Server.InsufficientInstanceCapacity":
		return &cloud.CapacityError{InstanceType: providerType, Err: err}
	case "Client.VolumeLimitExceeded":
		return &cloud.QuotaError{Err: fmt.Errorf("%w (the account's EBS volume limit)", err)}
	case "Client.InternalError", "Client.InvalidSnapshot.NotFound":
		// Client.InternalError is mostly an EBS encryption key the
		// launch may not use.
		return &cloud.PermanentError{Err: fmt.Errorf("%w (check the image's snapshots and the KMS key of its encrypted volumes, and that the instances may use it)", err)}
	}
	return err
}

// subnetFullMessages are the messages (lower case) with which EC2 says a
// subnet has no free address under another code (InvalidParameterValue):
// the same as InsufficientFreeAddressesInSubnet.
var subnetFullMessages = []string{
	"not enough free addresses in subnet",
	"sufficient free ipv4 addresses",
}

// tableCode is err's EC2 code as the tables above know it: a code they
// do not list stands for its prefix before the first dot
// ("AuthFailure.ServiceLinkedRoleCreationNotPermitted" is an AuthFailure),
// and a full subnet reported by its message is
// InsufficientFreeAddressesInSubnet.
func tableCode(err error) string {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return ""
	}
	code, msg := ae.ErrorCode(), strings.ToLower(ae.ErrorMessage())
	for _, m := range subnetFullMessages {
		if strings.Contains(msg, m) {
			return "InsufficientFreeAddressesInSubnet"
		}
	}
	if known(code) {
		return code
	}
	if prefix, _, ok := strings.Cut(code, "."); ok && known(prefix) {
		return prefix
	}
	return code
}

func known(code string) bool {
	return capacityCodes[code] || subnetCodes[code] || quotaCodes[code] || throttleCodes[code] || permanentCodes[code]
}

// namesType reports whether err's message names the instance type: an
// Unsupported error is about the type in that zone only then (another
// subnet's zone may have it); otherwise it is about the request.
func namesType(err error, providerType string) bool {
	var ae smithy.APIError
	return providerType != "" && errors.As(err, &ae) && strings.Contains(ae.ErrorMessage(), providerType)
}

// errorCode is the EC2 error code in err's chain, or "".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// mapError turns an EC2 error from op into the pool's error kinds.
// providerType is the type a create asked for ("" for other calls).
func (d *Driver) mapError(op, providerType string, err error) error {
	if err == nil {
		d.throttled(false)
		return nil
	}
	code := tableCode(err)
	typed := namesType(err, providerType)
	if code == "AuthFailure" && strings.Contains(errorCode(err), "ServiceLinkedRole") {
		err = fmt.Errorf("%w (spot instances need EC2's service-linked role for spot: create it once with \"aws iam create-service-linked-role --aws-service-name spot.amazonaws.com\", or allow iam:CreateServiceLinkedRole)", err)
	}
	err = fmt.Errorf("ec2 %s: %w", op, err)
	switch {
	case code == "Unsupported" && !typed:
		return &cloud.PermanentError{Err: fmt.Errorf("%w (check [cloud.ec2] in the config)", err)}
	case throttleCodes[code]:
		return &cloud.RateLimitError{RetryAfter: d.throttled(true), Err: err}
	case quotaCodes[code]:
		return &cloud.QuotaError{Err: err}
	case capacityCodes[code] && providerType != "":
		return &cloud.CapacityError{InstanceType: providerType, Err: err}
	case code == "InsufficientFreeAddressesInSubnet", code == "InsufficientCapacity", code == "InsufficientVolumeCapacity":
		return &cloud.CapacityError{Err: err}
	case permanentCodes[code], subnetCodes[code]:
		return &cloud.PermanentError{Err: fmt.Errorf("%w (check [cloud.ec2] in the config and the IAM permissions listed in the README)", err)}
	}
	return err
}

// throttled records a throttled call (or, with false, a call that got
// through) and returns when calls may resume: the back-off doubles with
// each throttle in a row, from ThrottleBackoff up to MaxThrottleBackoff.
func (d *Driver) throttled(yes bool) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !yes {
		d.throttleStreak = 0
		return time.Time{}
	}
	wait := d.opts.ThrottleBackoff
	for i := 0; i < d.throttleStreak && wait < d.opts.MaxThrottleBackoff; i++ {
		wait *= 2
	}
	wait = min(wait, d.opts.MaxThrottleBackoff)
	d.throttleStreak++
	return d.opts.Now().Add(wait)
}
