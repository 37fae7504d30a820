package ec2

import (
	"errors"
	"fmt"
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
	subnetCodes = codeSet("InsufficientFreeAddressesInSubnet", "InvalidSubnetID.NotFound", "InvalidSubnet")
	quotaCodes  = codeSet("InstanceLimitExceeded", "VcpuLimitExceeded", "MaxSpotInstanceCountExceeded",
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
	code := errorCode(err)
	err = fmt.Errorf("ec2 %s: %w", op, err)
	switch {
	case throttleCodes[code]:
		return &cloud.RateLimitError{RetryAfter: d.throttled(true), Err: err}
	case quotaCodes[code]:
		return &cloud.QuotaError{Err: err}
	case capacityCodes[code] && providerType != "":
		return &cloud.CapacityError{InstanceType: providerType, Err: err}
	case code == "InsufficientFreeAddressesInSubnet", code == "InsufficientCapacity":
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
