// Package ec2 is the Amazon EC2 cloud driver (docs/design.md §8), on
// aws-sdk-go-v2. Instances carry the dispatcher's tags; a new instance
// gets the dispatcher's authorized key and its per-instance secret through
// user-data (userdata.go), and the executor's secret check proves it is
// the instance this dispatcher created before anything runs on it.
//
// EC2's errors are mapped onto the pool's kinds (errors.go); creates fail
// over across the configured subnets; listings are filtered by the
// dispatcher's owner tag key, paginated, skip terminated instances, and
// keep instances this driver created that EC2's eventually consistent
// DescribeInstances does not show yet.
package ec2

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
)

// Defaults for zero Options fields.
const (
	DefaultAdminUser          = "dispatch-tui"
	DefaultSSHPort            = 22
	DefaultVolumeType         = "gp3"
	DefaultScratchDevice      = "/dev/xvdb"
	DefaultListGrace          = 5 * time.Minute
	DefaultThrottleBackoff    = time.Second
	DefaultMaxThrottleBackoff = time.Minute
	DefaultMaxAttempts        = 3
	DefaultPageSize           = 1000
	DefaultRequestTimeout     = time.Minute
)

// Options configures a Driver. The engine's [cloud.ec2] section maps onto
// it (engine/launch); this package does not read the config.
type Options struct {
	Region string
	// Profile is a shared-config profile; "" = the default credential
	// chain (environment, shared config, instance role).
	Profile string
	// Endpoint overrides the EC2 API endpoint URL ("" = AWS's).
	Endpoint string
	// Credentials, when set, replace the default credential chain.
	Credentials aws.CredentialsProvider

	ImageID          string
	SubnetIDs        []string // tried in turn on subnet-specific errors; nil = the default VPC's choice
	SecurityGroupIDs []string
	// KeyPairName is the EC2 key pair to launch with; "" = none: the
	// user-data authorizes the dispatcher's key, and importing it would
	// only add EC2's limits (RSA and ED25519 keys only) and its eventual
	// consistency (a key pair just imported may be unknown to
	// RunInstances).
	KeyPairName string
	// Signer is the dispatcher's client key (required): its public half
	// goes to the admin user's authorized_keys through user-data, and
	// Executor logs in with it.
	Signer ssh.Signer
	// AdminUser is the account user-data creates and the dispatcher logs
	// in as.
	AdminUser string
	SSHPort   int

	// RootVolumeSize (bytes, rounded up to GiB; 0 = the image's) and
	// RootVolumeType ("" = gp3) describe the root EBS volume.
	RootVolumeSize int64
	RootVolumeType string
	// ScratchVolumeType is the type of the scratch EBS volume attached as
	// ScratchDevice, sized by the instance type's scratch; "" = gp3.
	// User-data mounts it at ScratchDir (scratch.go).
	ScratchVolumeType string
	ScratchDevice     string
	// IAMInstanceProfile is a name or an ARN; "" = none.
	IAMInstanceProfile string
	// Tags are added to every instance (the dispatcher's own win).
	Tags map[string]string
	// UsePrivateIP: reach instances at their private address (the
	// dispatcher runs in the VPC); otherwise at their public one, which
	// the instances are asked to get.
	UsePrivateIP bool
	// MetadataHopLimit is the instances' HttpPutResponseHopLimit (1 to
	// 64): how many hops a metadata token travels. The metadata service
	// always requires tokens; with 1 a container on a docker bridge gets
	// none, so it cannot read the user-data (the instance secret) or the
	// role's credentials. Required: the engine's config holds the default.
	MetadataHopLimit int32

	// ListGrace is how long an instance this driver created is listed
	// although DescribeInstances does not show it yet.
	ListGrace time.Duration
	// ThrottleBackoff and MaxThrottleBackoff bound the pause after a
	// throttled call; it doubles with each throttle in a row.
	ThrottleBackoff    time.Duration
	MaxThrottleBackoff time.Duration
	// MaxAttempts of one API call, for transient (5xx, network) errors.
	// Throttling and capacity errors are never retried here: the pool
	// backs off.
	MaxAttempts int
	// RequestTimeout bounds each HTTP request to the API, so that a hung
	// endpoint cannot hold a create for ever.
	RequestTimeout time.Duration
	// PageSize is DescribeInstances' MaxResults (5..1000).
	PageSize int32
	// SpotPriceInterval is how often the spot prices of the types in use
	// are read (DescribeSpotPriceHistory), at a listing; 0 = at every
	// listing. The engine's config holds the default.
	SpotPriceInterval time.Duration
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Driver is the EC2 cloud.InstanceSet.
type Driver struct {
	opts   Options
	log    *slog.Logger
	client *ec2.Client

	// rootMu is held while the image's root device is looked up; the
	// result is kept once found (a failure is tried again on the next
	// create).
	rootMu     sync.Mutex
	rootDevice string

	mu             sync.Mutex
	subnet         int // index in SubnetIDs of the subnet that last worked
	throttleStreak int
	// created holds the instances this driver created until a listing
	// shows them or ListGrace passes (eventual consistency).
	created map[cloud.InstanceID]createdInstance
	// known is the last state seen of every instance: addresses appear
	// after launch, and executors ask for them here.
	known map[cloud.InstanceID]*Instance

	spot spotPrices // spotprice.go
}

type createdInstance struct {
	inst *Instance
	at   time.Time
}

var _ cloud.InstanceSet = (*Driver)(nil)

// New checks opts and builds the EC2 client. It makes no API call.
func New(ctx context.Context, opts Options) (*Driver, error) {
	if opts.Region == "" {
		return nil, errors.New("ec2 driver: region is required")
	}
	if opts.ImageID == "" {
		return nil, errors.New("ec2 driver: image id is required")
	}
	if opts.Signer == nil {
		return nil, errors.New("ec2 driver: the dispatcher's client key is required")
	}
	if opts.Signer.PublicKey().Type() == "ssh-dss" {
		// OpenSSH refuses DSA keys by default since 7.0 and dropped them
		// in 9.8: every login to every instance would fail.
		return nil, errors.New("ec2 driver: the client key (cloud.ssh_key_file) is a DSA key, which the sshd of current images refuses: use an ED25519, ECDSA or RSA key")
	}
	if opts.MetadataHopLimit < 1 || opts.MetadataHopLimit > 64 {
		return nil, fmt.Errorf("ec2 driver: metadata hop limit must be 1 to 64 (got %d)", opts.MetadataHopLimit)
	}
	if opts.AdminUser == "" {
		opts.AdminUser = DefaultAdminUser
	}
	if !cloud.PortableUserName(opts.AdminUser) {
		return nil, fmt.Errorf("ec2 driver: admin user %q is not a valid user name", opts.AdminUser)
	}
	if opts.SSHPort == 0 {
		opts.SSHPort = DefaultSSHPort
	}
	if opts.RootVolumeType == "" {
		opts.RootVolumeType = DefaultVolumeType
	}
	if opts.ScratchVolumeType == "" {
		opts.ScratchVolumeType = DefaultVolumeType
	}
	if opts.ScratchDevice == "" {
		opts.ScratchDevice = DefaultScratchDevice
	}
	if opts.ListGrace == 0 {
		opts.ListGrace = DefaultListGrace
	}
	if opts.ThrottleBackoff <= 0 {
		opts.ThrottleBackoff = DefaultThrottleBackoff
	}
	if opts.MaxThrottleBackoff < opts.ThrottleBackoff {
		opts.MaxThrottleBackoff = max(DefaultMaxThrottleBackoff, opts.ThrottleBackoff)
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.PageSize == 0 {
		opts.PageSize = DefaultPageSize
	}
	opts.PageSize = min(max(opts.PageSize, 5), 1000)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	loadOpts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRegion(opts.Region),
		awsconfig.WithRetryer(func() aws.Retryer { return newRetryer(opts.MaxAttempts) }),
		awsconfig.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(opts.RequestTimeout)),
	}
	if opts.Profile != "" {
		loadOpts = append(loadOpts, awsconfig.WithSharedConfigProfile(opts.Profile))
	}
	if opts.Credentials != nil {
		loadOpts = append(loadOpts, awsconfig.WithCredentialsProvider(opts.Credentials))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("ec2 driver: load AWS configuration: %w", err)
	}
	client := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
	})
	return &Driver{
		opts:    opts,
		log:     log,
		client:  client,
		created: make(map[cloud.InstanceID]createdInstance),
		known:   make(map[cloud.InstanceID]*Instance),
	}, nil
}

// newRetryer retries transient failures only: throttling, capacity and
// quota errors go back to the pool at once, which backs off for all its
// cloud calls (the SDK's own retries would hide them and hold a create).
func newRetryer(maxAttempts int) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		o.RateLimiter = ratelimit.None
		noRetry := retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			c := tableCode(err)
			if throttleCodes[c] || quotaCodes[c] || capacityCodes[c] || subnetCodes[c] || permanentCodes[c] {
				return aws.FalseTernary
			}
			return aws.UnknownTernary
		})
		o.Retryables = append([]retry.IsErrorRetryable{noRetry}, o.Retryables...)
	})
}

// Stop releases nothing: the client holds no resources.
func (d *Driver) Stop() {}

// rootDeviceName is the image's root device, needed to size its volume.
func (d *Driver) rootDeviceName(ctx context.Context) (string, error) {
	d.rootMu.Lock()
	defer d.rootMu.Unlock()
	if d.rootDevice != "" {
		return d.rootDevice, nil
	}
	out, err := d.client.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{d.opts.ImageID}})
	switch {
	case err != nil:
		return "", d.mapError("describe image "+d.opts.ImageID, "", err)
	case len(out.Images) == 0 || aws.ToString(out.Images[0].RootDeviceName) == "":
		return "", &cloud.PermanentError{Err: fmt.Errorf("ec2: image %s not found or has no root device: check image_id in [cloud.ec2]", d.opts.ImageID)}
	}
	d.rootDevice = aws.ToString(out.Images[0].RootDeviceName)
	return d.rootDevice, nil
}

// gib rounds bytes up to whole GiB.
func gib(bytes int64) int32 {
	const g = int64(1) << 30
	return int32((bytes + g - 1) / g)
}

// Create launches one instance of type it, trying each configured subnet
// from the one that worked last.
func (d *Driver) Create(ctx context.Context, it cloud.InstanceType, tags cloud.Tags) (cloud.Instance, error) {
	secret := tags[cloud.TagSecret]
	if strings.ContainsAny(secret, "'\n\r\\") {
		return nil, fmt.Errorf("ec2: create %s: the instance secret has characters user-data cannot carry", it.Name)
	}
	in := &ec2.RunInstancesInput{
		ImageId:      aws.String(d.opts.ImageID),
		InstanceType: types.InstanceType(it.ProviderType),
		MinCount:     aws.Int32(1),
		MaxCount:     aws.Int32(1),
		UserData:     aws.String(base64.StdEncoding.EncodeToString(UserData(d.opts.AdminUser, d.opts.Signer.PublicKey(), secret, d.scratchFor(it)))),
		TagSpecifications: []types.TagSpecification{
			{ResourceType: types.ResourceTypeInstance, Tags: d.awsTags(tags)},
			// The secret stays off the volumes: their tags are readable
			// by whoever may describe volumes, and they outlive it.
			{ResourceType: types.ResourceTypeVolume, Tags: d.awsTags(withoutSecret(tags))},
		},
	}
	if d.opts.KeyPairName != "" {
		in.KeyName = aws.String(d.opts.KeyPairName)
	}
	if d.opts.RootVolumeSize > 0 {
		dev, err := d.rootDeviceName(ctx)
		if err != nil {
			return nil, fmt.Errorf("ec2: create %s: %w", it.Name, err)
		}
		in.BlockDeviceMappings = append(in.BlockDeviceMappings, types.BlockDeviceMapping{
			DeviceName: aws.String(dev),
			Ebs: &types.EbsBlockDevice{
				VolumeSize: aws.Int32(gib(d.opts.RootVolumeSize)), VolumeType: types.VolumeType(d.opts.RootVolumeType),
				DeleteOnTermination: aws.Bool(true),
			},
		})
	}
	if it.Scratch > 0 {
		in.BlockDeviceMappings = append(in.BlockDeviceMappings, types.BlockDeviceMapping{
			DeviceName: aws.String(d.opts.ScratchDevice),
			Ebs: &types.EbsBlockDevice{
				VolumeSize: aws.Int32(gib(it.Scratch)), VolumeType: types.VolumeType(d.opts.ScratchVolumeType),
				DeleteOnTermination: aws.Bool(true),
			},
		})
	}
	if p := d.opts.IAMInstanceProfile; p != "" {
		if strings.HasPrefix(p, "arn:") {
			in.IamInstanceProfile = &types.IamInstanceProfileSpecification{Arn: aws.String(p)}
		} else {
			in.IamInstanceProfile = &types.IamInstanceProfileSpecification{Name: aws.String(p)}
		}
	}
	// Always sent: an image's or account's defaults may allow IMDSv1
	// (not hop-limited) or a hop limit of 2, and either lets containers
	// read the user-data and the role's credentials.
	in.MetadataOptions = &types.InstanceMetadataOptionsRequest{
		HttpTokens: types.HttpTokensStateRequired, HttpEndpoint: types.InstanceMetadataEndpointStateEnabled,
		HttpPutResponseHopLimit: aws.Int32(d.opts.MetadataHopLimit),
	}
	if it.Preemptible {
		in.InstanceMarketOptions = &types.InstanceMarketOptionsRequest{
			MarketType: types.MarketTypeSpot,
			SpotOptions: &types.SpotMarketOptions{
				SpotInstanceType:             types.SpotInstanceTypeOneTime,
				InstanceInterruptionBehavior: types.InstanceInterruptionBehaviorTerminate,
			},
		}
	}

	subnets := d.opts.SubnetIDs
	if len(subnets) == 0 {
		subnets = []string{""}
	}
	d.mu.Lock()
	first := d.subnet % len(subnets)
	d.mu.Unlock()
	var lastErr error
	for n := range subnets {
		i := (first + n) % len(subnets)
		d.placeIn(in, subnets[i])
		in.ClientToken = aws.String(clientToken(secret, subnets[i]))
		out, err := d.client.RunInstances(ctx, in, guarded)
		if err == nil && len(out.Instances) == 1 {
			d.throttled(false)
			d.mu.Lock()
			d.subnet = i
			inst := d.newInstance(out.Instances[0])
			now := d.opts.Now()
			inst.created = now
			d.created[inst.ID()] = createdInstance{inst: inst, at: now}
			d.known[inst.ID()] = inst
			d.mu.Unlock()
			d.log.Info("ec2: instance created", "instance", string(inst.ID()), "type", it.ProviderType, "subnet", subnets[i], "spot", it.Preemptible)
			return inst, nil
		}
		if err == nil {
			err = fmt.Errorf("RunInstances returned %d instances, want 1", len(out.Instances))
		}
		code := tableCode(err)
		lastErr = d.scopeQuota(d.mapError(fmt.Sprintf("create %s (%s) in subnet %q", it.Name, it.ProviderType, subnets[i]), it.ProviderType, err), code, it)
		if !(subnetCodes[code] || capacityCodes[code]) || ctx.Err() != nil {
			break
		}
		d.log.Warn("ec2: subnet cannot take the instance, trying the next", "subnet", subnets[i], "code", code)
	}
	return nil, lastErr
}

// clientToken is RunInstances' idempotency token for one attempt, at most
// 64 ASCII characters. It is derived from the instance's secret (new for
// each instance the pool asks for, the same when the pool retries a create
// whose outcome it could not know) and the subnet: a retry of an attempt
// gets the instance that attempt made, not a second one, and each subnet
// tried is a request of its own (EC2 refuses a token reused with other
// parameters). Without a secret it is random.
func clientToken(secret, subnet string) string {
	var sum [32]byte
	if secret == "" {
		rand.Read(sum[:])
	} else {
		sum = sha256.Sum256([]byte(secret + "\x00" + subnet))
	}
	return cloud.TagPrefix + hex.EncodeToString(sum[:24])
}

// scratchFor is the scratch volume an instance of type it gets: its
// scratch size rounded up to whole GiB, as the volume is made.
func (d *Driver) scratchFor(it cloud.InstanceType) Scratch {
	if it.Scratch <= 0 {
		return Scratch{}
	}
	return Scratch{Device: d.opts.ScratchDevice, Bytes: int64(gib(it.Scratch)) << 30}
}

// placeIn sets the subnet (and, for public addresses, a network interface
// asking for one) of in.
func (d *Driver) placeIn(in *ec2.RunInstancesInput, subnet string) {
	if d.opts.UsePrivateIP {
		in.SubnetId = nil
		if subnet != "" {
			in.SubnetId = aws.String(subnet)
		}
		in.SecurityGroupIds = d.opts.SecurityGroupIDs
		return
	}
	ni := types.InstanceNetworkInterfaceSpecification{
		DeviceIndex:              aws.Int32(0),
		AssociatePublicIpAddress: aws.Bool(true),
		DeleteOnTermination:      aws.Bool(true),
		Groups:                   d.opts.SecurityGroupIDs,
	}
	if subnet != "" {
		ni.SubnetId = aws.String(subnet)
	}
	in.NetworkInterfaces = []types.InstanceNetworkInterfaceSpecification{ni}
}

// awsTags converts the configured extra tags plus tags to EC2's form,
// sorted by key.
func (d *Driver) awsTags(tags cloud.Tags) []types.Tag {
	all := d.allTags(tags)
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]types.Tag, len(keys))
	for i, k := range keys {
		out[i] = types.Tag{Key: aws.String(k), Value: aws.String(all[k])}
	}
	return out
}

// withoutSecret is tags less the instance's secret.
func withoutSecret(tags cloud.Tags) cloud.Tags {
	out := tags.Clone()
	delete(out, cloud.TagSecret)
	return out
}

func (d *Driver) allTags(tags cloud.Tags) cloud.Tags {
	all := make(cloud.Tags, len(d.opts.Tags)+len(tags))
	for k, v := range d.opts.Tags {
		all[k] = v
	}
	for k, v := range tags {
		all[k] = v
	}
	return all
}

// Instances lists the instances carrying the dispatcher's owner tag key
// (any owner: the pool shows other dispatchers' as foreign) whose tags
// include filter, plus those this driver created recently that the
// listing does not show yet. Terminated instances are left out.
func (d *Driver) Instances(ctx context.Context, filter cloud.Tags) ([]cloud.Instance, error) {
	in := &ec2.DescribeInstancesInput{
		Filters: []types.Filter{
			// Terminated instances are asked for too (EC2 shows them for
			// about an hour): they prove that an instance created here
			// and not listed yet is gone, not lagging.
			{Name: aws.String("tag-key"), Values: []string{cloud.TagOwner}},
		},
		MaxResults: aws.Int32(d.opts.PageSize),
	}
	keys := make([]string, 0, len(filter))
	for k := range filter {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		in.Filters = append(in.Filters, types.Filter{Name: aws.String("tag:" + k), Values: []string{filter[k]}})
	}
	var listed []types.Instance
	pages := ec2.NewDescribeInstancesPaginator(d.client, in)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, d.mapError("list instances", "", err)
		}
		for _, r := range out.Reservations {
			listed = append(listed, r.Instances...)
		}
	}
	d.throttled(false)
	d.readSpotPrices(ctx, listed)

	now := d.opts.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := make(map[cloud.InstanceID]bool, len(listed))
	var result []cloud.Instance
	for _, li := range listed {
		if li.State != nil && li.State.Name == types.InstanceStateNameTerminated {
			id := cloud.InstanceID(aws.ToString(li.InstanceId))
			if old := d.known[id]; old != nil {
				// Whoever holds it learns how it ended (LaunchFailed).
				old.update(d.newInstance(li))
				if err := old.LaunchFailed(); err != nil {
					d.log.Warn("ec2: instance ended during its launch", "instance", string(id), "err", err)
				}
			}
			delete(d.created, id)
			delete(d.known, id)
			continue
		}
		inst := d.newInstance(li)
		seen[inst.ID()] = true
		delete(d.created, inst.ID())
		if old := d.known[inst.ID()]; old != nil {
			old.update(inst)
			inst = old
		} else {
			d.known[inst.ID()] = inst
		}
		result = append(result, inst)
	}
	for id, c := range d.created {
		switch {
		case now.Sub(c.at) >= d.opts.ListGrace:
			d.log.Warn("ec2: created instance never showed up in listings", "instance", string(id), "after", d.opts.ListGrace)
			delete(d.created, id)
		case !seen[id] && matches(c.inst.Tags(), filter):
			result = append(result, c.inst)
		}
	}
	// Forget what neither the listing nor the grace period keeps.
	for id := range d.known {
		if _, ok := d.created[id]; !ok && !seen[id] && len(filter) == 0 {
			delete(d.known, id)
		}
	}
	sort.Slice(result, func(i, j int) bool { return result[i].ID() < result[j].ID() })
	return result, nil
}

func matches(tags, filter cloud.Tags) bool {
	for k, v := range filter {
		if got, ok := tags[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// address returns where instance id's SSH server is, as last seen.
func (d *Driver) address(id cloud.InstanceID) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if inst := d.known[id]; inst != nil {
		return inst.Address()
	}
	return ""
}

// newInstance builds an Instance from EC2's description.
func (d *Driver) newInstance(li types.Instance) *Instance {
	inst := &Instance{d: d}
	inst.Init(cloud.InstanceID(aws.ToString(li.InstanceId)), cloud.Description[described]{})
	inst.set(li)
	return inst
}

func (d *Driver) addressOf(li types.Instance) string {
	ip := aws.ToString(li.PublicIpAddress)
	if d.opts.UsePrivateIP {
		ip = aws.ToString(li.PrivateIpAddress)
	}
	if ip == "" {
		return ""
	}
	return joinHostPort(ip, d.opts.SSHPort)
}

func joinHostPort(ip string, port int) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]:" + strconv.Itoa(port)
	}
	return ip + ":" + strconv.Itoa(port)
}

// forget drops a destroyed instance from the grace list: a listing that
// does not show it any more means it is gone.
func (d *Driver) forget(id cloud.InstanceID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.created, id)
}
