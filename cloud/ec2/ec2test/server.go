//go:build linux

// Package ec2test is an EC2 API endpoint for tests: an httptest server
// speaking the EC2 Query protocol the AWS SDK uses (form-encoded POST
// requests naming an Action, XML responses in the EC2 namespace, EC2's
// error documents and codes, NextToken pagination) for the calls the ec2
// driver makes. Its instances are reachable: each runs an in-process SSH
// server (cloud/sshserver) on its own loopback address, accepting the key
// its user-data authorizes and holding the secret its user-data carries,
// so that the whole dispatcher runs on them. Faults can be injected:
// capacity per type and subnet, quotas, throttling, error codes per
// action, listing delays (eventual consistency) and spot interruptions,
// with their two-minute notice in each instance's metadata service.
// Quirks switch on the ways real EC2 differs from a simple endpoint that a
// driver must cope with. As EC2 does, it honours RunInstances' client
// tokens, lists terminated instances for a while (an hour) and then no
// more, and imports RSA and ED25519 keys only.
//
// Instances listen on 127.77.x.y (Linux routes all of 127/8 to the
// loopback interface), all on the same SSH port, as EC2 instances all
// listen on port 22 of their own address.
package ec2test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud/ec2"
	"dispatch-tui/cloud/sshserver"
	"dispatch-tui/engine/enginetest/freeport"
	"dispatch-tui/engine/runner/agent"
)

// The dummy account the server accepts requests from.
const (
	AccessKeyID     = "AKIDDISPATCHTUITEST"
	SecretAccessKey = "dispatch-tui-test-secret"
	Region          = "us-test-1"
	// ImageID is the one image the server knows (root device /dev/xvda).
	ImageID    = "ami-0dispatchtui0test"
	RootDevice = "/dev/xvda"
)

// Options configure a Server.
type Options struct {
	// Dir holds the instances' home and runner directories (required:
	// t.TempDir()).
	Dir string
	// Subnets are the subnets that exist; nil = "subnet-a", "subnet-b".
	Subnets []string
	// BootDelay: an instance's SSH server accepts connections this long
	// after its launch.
	BootDelay time.Duration
	// ShutdownTime is how long an instance EC2 reclaims is listed as
	// shutting-down before it is terminated; 0 = 5 s.
	ShutdownTime time.Duration
	// Seed seeds the random faults (rates).
	Seed uint64
	// Logger may be nil.
	Logger *slog.Logger
}

// Faults are the injected failures; change them with Configure.
type Faults struct {
	// CapacityTypes: RunInstances of these types fails with
	// InsufficientInstanceCapacity in every subnet.
	CapacityTypes map[string]bool
	// CapacitySubnets: RunInstances fails with InsufficientInstanceCapacity
	// in these subnets (their AZ has no capacity).
	CapacitySubnets map[string]bool
	// FullSubnets: RunInstances fails with
	// InsufficientFreeAddressesInSubnet in these subnets.
	FullSubnets map[string]bool
	// InstanceLimit > 0: RunInstances fails with InstanceLimitExceeded
	// while that many instances are not terminated.
	InstanceLimit int
	// VCPULimit > 0: RunInstances fails with VcpuLimitExceeded when the
	// new instance's vCPUs (VCPUs below, 2 if unknown) would exceed it.
	VCPULimit int
	VCPUs     map[string]int
	// VCPULimits are EC2's vCPU quotas, per instance family group and
	// market ("standard/on-demand", "p/spot": ec2.QuotaGroup): a
	// RunInstances whose vCPUs would take its group's live ones over the
	// limit fails with VcpuLimitExceeded (on demand) or
	// MaxSpotInstanceCountExceeded (spot). A group not listed has no
	// limit.
	VCPULimits map[string]int
	// SpotLimit > 0: spot RunInstances fails with
	// MaxSpotInstanceCountExceeded while that many spot instances live.
	SpotLimit int
	// ThrottleRate is the fraction of all calls answered with
	// RequestLimitExceeded (HTTP 503).
	ThrottleRate float64
	// CreateErrorRate is the fraction of RunInstances calls failing with
	// CreateErrorCode (default InternalError, HTTP 500).
	CreateErrorRate float64
	CreateErrorCode string
	// Errors forces an error code on every call of an action
	// ("RunInstances": "UnauthorizedOperation"), with ErrorMessage as its
	// message ("" = "injected <code> for <action>").
	Errors       map[string]string
	ErrorMessage string
	// LostLaunchResponses: the answers of the next this many RunInstances
	// that launch an instance (or repeat a launch by its client token) are
	// lost: they answer InternalError, as a timeout would leave the
	// caller, who cannot tell the instance exists.
	LostLaunchResponses int
	// ListDelay: a new instance is missing from DescribeInstances for
	// this long after its launch (EC2's eventual consistency).
	ListDelay time.Duration
	// Latency delays every answer (a slow or hung endpoint).
	Latency time.Duration
	// ActionLatency delays the answers of the actions named, on top of
	// Latency (a slow RunInstances).
	ActionLatency map[string]time.Duration
	// SpotNotice > 0: Interrupt first posts EC2's interruption notice in
	// the instance's metadata service (spot/instance-action, "terminate"
	// at now + SpotNotice) and reclaims the instance SpotNotice later, as
	// EC2 does two minutes after its notice. 0: Interrupt reclaims at
	// once, as a notice nobody read.
	SpotNotice time.Duration
}

// Quirks are behaviours of real EC2 that its documentation describes and
// a driver must cope with; each is off when zero. Change them with
// SetQuirks.
type Quirks struct {
	// SubnetFullByMessage: a full subnet (Faults.FullSubnets) answers
	// InvalidParameterValue "There aren't sufficient free Ipv4 addresses
	// or prefixes in subnet ...", as EC2 does for launches into a subnet
	// out of addresses, not InsufficientFreeAddressesInSubnet.
	SubnetFullByMessage bool
	// KeyPairLag: a key pair ImportKeyPair made is unknown to
	// RunInstances (InvalidKeyPair.NotFound) for this long: EC2's
	// eventual consistency between its calls.
	KeyPairLag time.Duration
	// LaunchTerminations: each launch takes the first code left here, and
	// that instance goes from pending to terminated with it as its
	// StateReason, its SSH server never up: EC2 ends an instance it cannot
	// start after RunInstances succeeded (Server.InsufficientInstanceCapacity,
	// Server.InternalError, Client.InternalError for an unusable KMS key,
	// Client.VolumeLimitExceeded).
	LaunchTerminations []string
	// IDLag: calls naming an instance (TerminateInstances, CreateTags,
	// DeleteTags) answer InvalidInstanceID.NotFound while listings do not
	// show it yet (Faults.ListDelay) and do nothing: EC2's eventual
	// consistency, which its documentation warns about for calls right
	// after a launch.
	IDLag bool
	// TerminatedListedFor is how long DescribeInstances shows a
	// terminated instance; 0 = an hour, as EC2 ("about an hour").
	TerminatedListedFor time.Duration
}

// DefaultTerminatedListedFor is how long EC2 lists terminated instances.
const DefaultTerminatedListedFor = time.Hour

// Server is a running fake EC2 endpoint.
type Server struct {
	opts    Options
	log     *slog.Logger
	hs      *httptest.Server
	sshPort int

	mu     sync.Mutex
	faults Faults
	quirks Quirks
	rnd    *mrand.Rand
	// The n-th call's throttle and the n-th launch's failure depend on
	// the seed alone, whatever the order of concurrent calls.
	throttleRnd, createRnd *mrand.Rand
	instances              map[string]*instance
	order                  []string // instance ids in launch order
	keyPairs               map[string]string
	keyImported            map[string]time.Time // when ImportKeyPair made a key pair (KeyPairLag)
	tokens                 map[string]launchToken
	images                 map[string]string // image id -> root device
	nextID                 int
	nextIP                 int
	calls                  map[string]int
	errors                 map[string]int // error code -> count
	closed                 bool
	// reclaims are the spot reclaims due after a notice, stopped by
	// Close.
	reclaims []*time.Timer
	// spotHistory is what DescribeSpotPriceHistory serves (spotprice.go).
	spotHistory []SpotPrice
	// requests are the API requests answered, in arrival order
	// (requests.go).
	requests []*Request
}

// NewServer starts a server; Close stops it and every instance.
func NewServer(opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("ec2test: Options.Dir is required")
	}
	if opts.Subnets == nil {
		opts.Subnets = []string{"subnet-a", "subnet-b"}
	}
	if opts.ShutdownTime <= 0 {
		opts.ShutdownTime = 5 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	port, err := freeport.Pick()
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts:        opts,
		log:         log,
		sshPort:     port,
		rnd:         mrand.New(mrand.NewPCG(opts.Seed, 0x6563327465737400)),
		createRnd:   mrand.New(mrand.NewPCG(opts.Seed, 0x6563327465737401)),
		throttleRnd: mrand.New(mrand.NewPCG(opts.Seed, 0x6563327465737402)),
		instances:   map[string]*instance{},
		keyPairs:    map[string]string{},
		keyImported: map[string]time.Time{},
		tokens:      map[string]launchToken{},
		images:      map[string]string{ImageID: RootDevice},
		calls:       map[string]int{},
		errors:      map[string]int{},
	}
	s.hs = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s, nil
}

// Start starts a server for a test with a directory under t.TempDir(), and
// closes it at the end of the test.
func Start(t interface {
	TempDir() string
	Cleanup(func())
	Fatal(...any)
}, opts Options) *Server {
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// URL is the endpoint to configure the driver with.
func (s *Server) URL() string { return s.hs.URL }

// SSHPort is the port every instance's SSH server listens on ([cloud]
// ssh_port).
func (s *Server) SSHPort() int { return s.sshPort }

// Env is the environment the driver's default credential chain needs to
// talk to this server: the dummy static credentials, and no instance
// metadata lookups.
func (s *Server) Env() map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID":           AccessKeyID,
		"AWS_SECRET_ACCESS_KEY":       SecretAccessKey,
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             filepath.Join(s.opts.Dir, "no-aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(s.opts.Dir, "no-aws-credentials"),
	}
}

// SetEnv sets Env for the rest of the test (t.Setenv).
func (s *Server) SetEnv(t interface{ Setenv(k, v string) }) {
	for k, v := range s.Env() {
		t.Setenv(k, v)
	}
}

// ConfigTOML is a config snippet using this server: the ec2 driver with
// its endpoint, region, image and subnets, and [cloud] ssh_port. Append
// [[instance_type]] tables whose provider_type are EC2 type names. The
// credentials come from Env.
func (s *Server) ConfigTOML() string {
	quoted := make([]string, len(s.opts.Subnets))
	for i, sn := range s.opts.Subnets {
		quoted[i] = strconv.Quote(sn)
	}
	return fmt.Sprintf(`[cloud]
driver = "ec2"
ssh_port = %d

[cloud.ec2]
region = %q
endpoint = %q
image_id = %q
subnet_ids = [%s]
use_private_ip = true
`, s.sshPort, Region, s.URL(), ImageID, strings.Join(quoted, ", "))
}

// Configure changes the faults.
func (s *Server) Configure(change func(*Faults)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(&s.faults)
}

// SetQuirks changes the quirks.
func (s *Server) SetQuirks(change func(*Quirks)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(&s.quirks)
}

// Calls returns how many requests named action (all actions for "")
// the server answered, errors included.
func (s *Server) Calls(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if action != "" {
		return s.calls[action]
	}
	n := 0
	for _, c := range s.calls {
		n += c
	}
	return n
}

// Errors returns how many error responses carried code.
func (s *Server) Errors(code string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errors[code]
}

// Close stops the HTTP server and every instance's SSH server, killing
// what runs on them.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for _, t := range s.reclaims {
		t.Stop()
	}
	var live []*instance
	for _, id := range s.order {
		live = append(live, s.instances[id])
	}
	s.mu.Unlock()
	s.hs.Close()
	for _, in := range live {
		in.stop()
	}
}

// Instance is what the server knows of one instance, for assertions.
type Instance struct {
	ID           string
	Type         string
	State        string // pending, running, shutting-down, terminated
	Subnet       string
	Spot         bool
	PrivateIP    string
	PublicIP     string // "" unless a public address was asked for
	Address      string // ip:port of its SSH server
	KeyName      string
	Tags         map[string]string
	VolumeTags   map[string]string // the tags RunInstances asked for its volumes
	UserDataUser string
	Secret       string
	Authorized   string           // the authorized key from user-data
	BlockDevices map[string]int32 // device -> GiB
	IAMProfile   string
	IMDSv2       bool
	StateReason  string // the StateReason code (a launch-time termination, a spot reclaim)
	// NoticeReads counts the reads of the spot notice from the
	// instance's metadata service.
	NoticeReads int
	// MetadataHopLimit is the HttpPutResponseHopLimit asked for; "" when
	// the request left it to the image's or account's default.
	MetadataHopLimit string
	Home             string // the admin user's home directory
	RunnerDir        string
}

// TagInstance sets tag key on instance id as someone else would (an
// operator, a tag policy): not through the driver.
func (s *Server) TagInstance(id, key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range s.instances {
		if in.id == id {
			in.tags[key] = value
		}
	}
}

// Instances returns every instance launched, in launch order, terminated
// ones included.
func (s *Server) Instances() []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Instance, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.instances[id].info())
	}
	return out
}

// Live returns the ids of the instances not terminated.
func (s *Server) Live() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range s.order {
		if s.instances[id].state != stateTerminated {
			out = append(out, id)
		}
	}
	return out
}

// Interrupt reclaims a spot instance as EC2 does: with Faults.SpotNotice,
// the notice is posted in its metadata service first and the rest happens
// that long later. Then its processes die and it is listed as
// shutting-down, with the spot termination as its state reason, for
// Options.ShutdownTime, then as terminated.
func (s *Server) Interrupt(id string) error {
	s.mu.Lock()
	in := s.instances[id]
	switch {
	case in == nil || in.state == stateTerminated || in.state == stateShuttingDown:
		s.mu.Unlock()
		return fmt.Errorf("ec2test: no live instance %s", id)
	case !in.spot:
		s.mu.Unlock()
		return fmt.Errorf("ec2test: %s is not a spot instance", id)
	case in.notice != "":
		s.mu.Unlock()
		return fmt.Errorf("ec2test: %s already has its interruption notice", id)
	}
	if lead := s.faults.SpotNotice; lead > 0 {
		in.notice = fmt.Sprintf(`{"action": "terminate", "time": %q}`, time.Now().Add(lead).UTC().Format(time.RFC3339))
		s.reclaims = append(s.reclaims, time.AfterFunc(lead, func() { s.reclaim(in) }))
		s.mu.Unlock()
		s.log.Info("ec2test: spot interruption notice posted", "instance", id, "lead", lead)
		return nil
	}
	s.mu.Unlock()
	s.reclaim(in)
	return nil
}

// reclaim ends a spot instance: shutting-down for the spot termination,
// then terminated.
func (s *Server) reclaim(in *instance) {
	s.mu.Lock()
	if s.closed || in.state == stateTerminated || in.state == stateShuttingDown {
		s.mu.Unlock()
		return
	}
	in.state = stateShuttingDown
	in.stateReason = "Server.SpotInstanceTermination"
	in.stateMessage = "Server.SpotInstanceTermination: Spot instance termination"
	in.reason = "Service initiated (" + time.Now().UTC().Format("2006-01-02 15:04:05 GMT") + ")"
	in.goneAt = time.Now().Add(s.opts.ShutdownTime)
	s.mu.Unlock()
	in.stop()
}

// ClientTokens returns the RunInstances client tokens the server has seen,
// sorted.
func (s *Server) ClientTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.tokens))
	for t := range s.tokens {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// KeyPairs returns the names of the key pairs.
func (s *Server) KeyPairs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.keyPairs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Instance states.
const (
	statePending      = "pending"
	stateRunning      = "running"
	stateShuttingDown = "shutting-down"
	stateTerminated   = "terminated"
)

var stateCodes = map[string]int{statePending: 0, stateRunning: 16, stateShuttingDown: 32, stateTerminated: 48}

type instance struct {
	id, typ, subnet, keyName, ip string
	public                       bool
	spot                         bool
	tags, volumeTags             map[string]string
	user, secret, authorized     string
	devices                      map[string]int32
	iamProfile                   string
	imdsv2                       bool
	hopLimit                     string
	launched, listableAt         time.Time
	state, reason                string
	terminatedAt                 time.Time // when it became terminated
	home, runnerDir              string
	srv                          *sshserver.Server
	stopOnce                     sync.Once

	// stateReason and stateMessage are EC2's StateReason; goneAt, when
	// a shutting-down instance becomes terminated.
	stateReason, stateMessage string
	goneAt                    time.Time
	// notice is the spot instance-action document once EC2 posted it;
	// imdsToken the metadata session token handed out last, and
	// noticeReads how many times the notice was asked for.
	notice      string
	imdsToken   string
	noticeReads int
}

// terminate marks the instance terminated at now.
func (in *instance) terminate(now time.Time) {
	if in.state != stateTerminated {
		in.state, in.terminatedAt = stateTerminated, now
	}
}

// gone reports whether EC2 would no longer know the instance at all:
// terminated longer ago than it lists terminated instances.
func (s *Server) gone(in *instance, now time.Time) bool {
	keep := s.quirks.TerminatedListedFor
	if keep <= 0 {
		keep = DefaultTerminatedListedFor
	}
	return in.state == stateTerminated && now.Sub(in.terminatedAt) >= keep
}

func (in *instance) info() Instance {
	tags, volumeTags := maps.Clone(in.tags), maps.Clone(in.volumeTags)
	devs := make(map[string]int32, len(in.devices))
	for k, v := range in.devices {
		devs[k] = v
	}
	pub := ""
	if in.public {
		pub = in.ip
	}
	addr := ""
	if in.srv != nil {
		addr = in.srv.Addr()
	}
	return Instance{
		ID: in.id, Type: in.typ, State: in.state, Subnet: in.subnet, Spot: in.spot,
		PrivateIP: in.ip, PublicIP: pub, Address: addr, KeyName: in.keyName, Tags: tags, VolumeTags: volumeTags,
		UserDataUser: in.user, Secret: in.secret, Authorized: in.authorized, BlockDevices: devs,
		IAMProfile: in.iamProfile, IMDSv2: in.imdsv2, StateReason: in.stateReason, NoticeReads: in.noticeReads, MetadataHopLimit: in.hopLimit,
		Home: in.home, RunnerDir: in.runnerDir,
	}
}

// stop closes the instance's SSH server and kills what its sessions and
// runner started.
func (in *instance) stop() {
	in.stopOnce.Do(func() {
		if in.srv != nil {
			in.srv.Close()
		}
		agent.KillAll(in.runnerDir)
	})
}

// boot creates the instance's directories, writes what its user-data
// would (the secret in the admin user's home) and starts its SSH server
// on a loopback address of its own. Called without s.mu.
func (s *Server) boot(in *instance, key ssh.PublicKey) error {
	in.home = filepath.Join(s.opts.Dir, in.id, "home")
	in.runnerDir = filepath.Join(s.opts.Dir, in.id, "runner")
	if err := os.MkdirAll(in.home, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(in.home, ec2.SecretFile), []byte(in.secret+"\n"), 0o600); err != nil {
		return err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	hostKey, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return err
	}
	var lastErr error
	for range 8 {
		ip := s.allocIP()
		srv, err := sshserver.Start(sshserver.Config{
			Listen:     net.JoinHostPort(ip, strconv.Itoa(s.sshPort)),
			HostKey:    hostKey,
			ClientKeys: []ssh.PublicKey{key},
			ReadyAt:    in.launched.Add(s.opts.BootDelay),
			Home:       in.home,
			Env: []string{agent.StateDirEnv + "=" + in.runnerDir,
				// This instance's metadata service on the endpoint.
				ec2.IMDSEndpointEnv + "=" + s.hs.URL + imdsPrefix + in.id},
			Logger: s.log.With("instance", in.id),
		})
		if err != nil {
			lastErr = err
			continue
		}
		in.ip, in.srv = ip, srv
		return nil
	}
	return lastErr
}

func (s *Server) allocIP() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextIP++
	n := s.nextIP
	return fmt.Sprintf("127.77.%d.%d", n/250, n%250+1)
}

func (s *Server) newID(prefix string) string {
	s.nextID++
	b, _ := rand.Int(rand.Reader, big.NewInt(1<<32))
	return fmt.Sprintf("%s-%08x%08x", prefix, s.nextID, b.Int64())
}

// decodeUserData reads the base64 user-data the SDK sent.
func decodeUserData(v string) (user, key, secret string, ok bool) {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return "", "", "", false
	}
	return ec2.ParseUserData(b)
}
