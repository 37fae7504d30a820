// The EC2 Query API the test endpoint answers: actions, their XML, errors and injected faults.

//go:build linux

package ec2test

import (
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud/ec2"
)

const xmlns = "http://ec2.amazonaws.com/doc/2016-11-15/"

// apiError is an EC2 error response.
type apiError struct {
	status  int
	code    string
	message string
}

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// statusOf is the HTTP status EC2 answers code with.
func statusOf(code string) int {
	switch code {
	case "AuthFailure":
		return http.StatusUnauthorized
	case "UnauthorizedOperation", "OptInRequired", "Blocked":
		return http.StatusForbidden
	case "RequestLimitExceeded", "Unavailable":
		return http.StatusServiceUnavailable
	case "InternalError":
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, imdsPrefix) {
		s.serveIMDS(w, r)
		return
	}
	reqID := s.requestID()
	if r.Method != http.MethodPost {
		writeError(w, reqID, errorf(http.StatusBadRequest, "InvalidAction", "EC2 Query requests are POSTs"))
		return
	}
	if err := r.ParseForm(); err != nil {
		writeError(w, reqID, errorf(http.StatusBadRequest, "MalformedQueryString", "%v", err))
		return
	}
	f := r.PostForm
	action := f.Get("Action")
	rec := s.record(r, f, time.Now())
	s.mu.Lock()
	s.calls[action]++
	latency := s.faults.Latency + s.faults.ActionLatency[action]
	s.mu.Unlock()
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		}
	}
	if !strings.Contains(r.Header.Get("Authorization"), "Credential="+AccessKeyID+"/") {
		s.fail(w, reqID, rec, errorf(http.StatusUnauthorized, "AuthFailure", "AWS was not able to validate the provided access credentials"))
		return
	}
	if e := s.injected(action); e != nil {
		s.fail(w, reqID, rec, e)
		return
	}
	var body any
	var e *apiError
	switch action {
	case "RunInstances":
		body, e = s.runInstances(f, reqID)
	case "DescribeInstances":
		body, e = s.describeInstances(f, reqID)
	case "TerminateInstances":
		body, e = s.terminateInstances(f, reqID)
	case "CreateTags":
		body, e = s.createTags(f, reqID)
	case "DeleteTags":
		body, e = s.deleteTags(f, reqID)
	case "DescribeKeyPairs":
		body, e = s.describeKeyPairs(f, reqID)
	case "ImportKeyPair":
		body, e = s.importKeyPair(f, reqID)
	case "DescribeImages":
		body, e = s.describeImages(f, reqID)
	case "DescribeSpotPriceHistory":
		body, e = s.describeSpotPriceHistory(f, reqID)
	default:
		e = errorf(http.StatusBadRequest, "InvalidAction", "The action %s is not valid for this web service.", action)
	}
	if e != nil {
		s.fail(w, reqID, rec, e)
		return
	}
	if run, ok := body.(runInstancesResponse); ok {
		s.mu.Lock()
		for _, in := range run.Instances {
			rec.Instances = append(rec.Instances, in.InstanceID)
		}
		s.mu.Unlock()
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Write([]byte(xml.Header))
	if err := xml.NewEncoder(w).Encode(body); err != nil {
		s.log.Error("ec2test: encoding response", "action", action, "err", err)
	}
}

func (s *Server) requestID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", s.rnd.Uint32(), s.rnd.Uint64()&0xffffffffffff)
}

// injected returns the fault for a call of action, if any.
func (s *Server) injected(action string) *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &s.faults
	if code := f.Errors[action]; code != "" {
		if f.ErrorMessage != "" {
			return errorf(statusOf(code), code, "%s", f.ErrorMessage)
		}
		return errorf(statusOf(code), code, "injected %s for %s", code, action)
	}
	if f.ThrottleRate > 0 && s.throttleRnd.Float64() < f.ThrottleRate {
		return errorf(http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded.")
	}
	if action == "RunInstances" && f.CreateErrorRate > 0 && s.createRnd.Float64() < f.CreateErrorRate {
		code := f.CreateErrorCode
		if code == "" {
			code = "InternalError"
		}
		return errorf(statusOf(code), code, "injected create failure")
	}
	return nil
}

func (s *Server) fail(w http.ResponseWriter, reqID string, rec *Request, e *apiError) {
	s.mu.Lock()
	s.errors[e.code]++
	rec.Error = e.code
	s.mu.Unlock()
	writeError(w, reqID, e)
}

type errorResponse struct {
	XMLName   xml.Name    `xml:"Response"`
	Errors    []errorElem `xml:"Errors>Error"`
	RequestID string      `xml:"RequestID"`
}

type errorElem struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func writeError(w http.ResponseWriter, reqID string, e *apiError) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(e.status)
	w.Write([]byte(xml.Header))
	xml.NewEncoder(w).Encode(errorResponse{Errors: []errorElem{{e.code, e.message}}, RequestID: reqID})
}

// Query-protocol lists are flattened: Name.1, Name.2, ...

func list(f url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		k := prefix + "." + strconv.Itoa(i)
		if !f.Has(k) {
			return out
		}
		out = append(out, f.Get(k))
	}
}

// members returns the prefixes of a list of structures: Name.1, Name.2...
func members(f url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		p := prefix + "." + strconv.Itoa(i)
		found := false
		for k := range f {
			if strings.HasPrefix(k, p+".") {
				found = true
				break
			}
		}
		if !found {
			return out
		}
		out = append(out, p)
	}
}

func tagsOf(f url.Values, prefix string) map[string]string {
	tags := map[string]string{}
	for _, m := range members(f, prefix) {
		tags[f.Get(m+".Key")] = f.Get(m + ".Value")
	}
	return tags
}

// Response documents.

type tagItem struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type stateElem struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type instanceElem struct {
	InstanceID        string    `xml:"instanceId"`
	ImageID           string    `xml:"imageId"`
	State             stateElem `xml:"instanceState"`
	Reason            string    `xml:"reason,omitempty"`
	StateReason       *stReason `xml:"stateReason,omitempty"`
	KeyName           string    `xml:"keyName,omitempty"`
	InstanceType      string    `xml:"instanceType"`
	LaunchTime        string    `xml:"launchTime"`
	SubnetID          string    `xml:"subnetId,omitempty"`
	PrivateIPAddress  string    `xml:"privateIpAddress,omitempty"`
	IPAddress         string    `xml:"ipAddress,omitempty"`
	InstanceLifecycle string    `xml:"instanceLifecycle,omitempty"`
	RootDeviceName    string    `xml:"rootDeviceName"`
	Tags              []tagItem `xml:"tagSet>item"`
}

// stReason is EC2's StateReason: why the instance changed state.
type stReason struct {
	Code    string `xml:"code"`
	Message string `xml:"message"`
}

func (s *Server) elem(in *instance, withPublic bool) instanceElem {
	e := instanceElem{
		InstanceID: in.id, ImageID: ImageID, InstanceType: in.typ,
		State: stateElem{stateCodes[in.state], in.state}, Reason: in.reason,
		KeyName: in.keyName, LaunchTime: in.launched.UTC().Format(time.RFC3339),
		SubnetID: in.subnet, RootDeviceName: RootDevice,
	}
	if in.stateReason != "" {
		e.StateReason = &stReason{Code: in.stateReason, Message: in.stateMessage}
	}
	if in.state != stateTerminated {
		e.PrivateIPAddress = in.ip
		if in.public && withPublic {
			e.IPAddress = in.ip
		}
	}
	if in.spot {
		e.InstanceLifecycle = "spot"
	}
	keys := make([]string, 0, len(in.tags))
	for k := range in.tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e.Tags = append(e.Tags, tagItem{k, in.tags[k]})
	}
	return e
}

type runInstancesResponse struct {
	XMLName       xml.Name       `xml:"RunInstancesResponse"`
	Xmlns         string         `xml:"xmlns,attr"`
	RequestID     string         `xml:"requestId"`
	ReservationID string         `xml:"reservationId"`
	OwnerID       string         `xml:"ownerId"`
	Instances     []instanceElem `xml:"instancesSet>item"`
}

const ownerID = "123456789012"

func (s *Server) runInstances(f url.Values, reqID string) (any, *apiError) {
	typ := f.Get("InstanceType")
	if f.Get("ImageId") == "" || typ == "" {
		return nil, errorf(400, "MissingParameter", "ImageId and InstanceType are required")
	}
	if f.Get("MinCount") != "1" || f.Get("MaxCount") != "1" {
		return nil, errorf(400, "InvalidParameterValue", "ec2test launches one instance at a time")
	}
	userData := f.Get("UserData")
	user, authorized, secret, ok := decodeUserData(userData)
	if !ok {
		return nil, errorf(400, "InvalidParameterValue", "user data does not set the dispatch-tui variables")
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(authorized))
	if err != nil {
		return nil, errorf(400, "InvalidParameterValue", "user data authorized key: %v", err)
	}
	subnet := f.Get("SubnetId")
	public := false
	groups := list(f, "SecurityGroupId")
	if ni := members(f, "NetworkInterface"); len(ni) > 0 {
		if len(ni) != 1 || f.Get(ni[0]+".DeviceIndex") != "0" {
			return nil, errorf(400, "InvalidParameterValue", "one network interface at device index 0")
		}
		if subnet != "" || len(groups) > 0 {
			return nil, errorf(400, "InvalidParameterCombination", "Network interfaces and an instance-level subnet ID or security groups may not be specified on the same request")
		}
		subnet = f.Get(ni[0] + ".SubnetId")
		public = f.Get(ni[0]+".AssociatePublicIpAddress") == "true"
	}
	devices := map[string]int32{}
	for _, m := range members(f, "BlockDeviceMapping") {
		n, _ := strconv.Atoi(f.Get(m + ".Ebs.VolumeSize"))
		devices[f.Get(m+".DeviceName")] = int32(n)
	}
	spot := f.Get("InstanceMarketOptions.MarketType") == "spot"
	tags, volumeTags := map[string]string{}, map[string]string{}
	for _, m := range members(f, "TagSpecification") {
		switch f.Get(m + ".ResourceType") {
		case "instance":
			tags = tagsOf(f, m+".Tag")
		case "volume":
			volumeTags = tagsOf(f, m+".Tag")
		}
	}
	iam := f.Get("IamInstanceProfile.Name")
	if iam == "" {
		iam = f.Get("IamInstanceProfile.Arn")
	}
	token, params := f.Get("ClientToken"), launchParams(f)
	if len(token) > 64 {
		return nil, errorf(400, "InvalidParameterValue", "ClientToken is longer than 64 characters")
	}

	s.mu.Lock()
	if prev, ok := s.tokens[token]; ok && token != "" && (prev.id != "" || prev.params != params) {
		defer s.mu.Unlock()
		return s.repeatLaunch(prev, params, reqID)
	}
	if token != "" {
		// A token is bound to its parameters from its first request,
		// whether or not that launched anything.
		s.tokens[token] = launchToken{params: params}
	}
	fl, q := &s.faults, &s.quirks
	live, spots, vcpus := 0, 0, 0
	scope := quotaScope(typ, spot)
	scopeVCPUs := 0 // of the new instance's family group and market
	for _, in := range s.instances {
		if in.state == stateTerminated {
			continue
		}
		live++
		if in.spot {
			spots++
		}
		vcpus += vcpusOf(fl, in.typ)
		if quotaScope(in.typ, in.spot) == scope {
			scopeVCPUs += vcpusOf(fl, in.typ)
		}
	}
	now := time.Now()
	keyName := f.Get("KeyName")
	scopeLimit, scoped := fl.VCPULimits[scope]
	var e *apiError
	switch {
	case s.images[f.Get("ImageId")] == "":
		e = errorf(400, "InvalidAMIID.NotFound", "The image id '[%s]' does not exist", f.Get("ImageId"))
	case keyName != "" && (s.keyPairs[keyName] == "" || now.Before(s.keyImported[keyName].Add(q.KeyPairLag))):
		e = errorf(400, "InvalidKeyPair.NotFound", "The key pair '%s' does not exist", keyName)
	case subnet != "" && !slices.Contains(s.opts.Subnets, subnet):
		e = errorf(400, "InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", subnet)
	case fl.FullSubnets[subnet] && q.SubnetFullByMessage:
		e = errorf(400, "InvalidParameterValue", "There aren't sufficient free Ipv4 addresses or prefixes in subnet '%s' to satisfy the requested number of instances.", subnet)
	case fl.FullSubnets[subnet]:
		e = errorf(400, "InsufficientFreeAddressesInSubnet", "There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", subnet)
	case fl.CapacityTypes[typ] || fl.CapacitySubnets[subnet]:
		e = errorf(500, "InsufficientInstanceCapacity", "We currently do not have sufficient %s capacity in the Availability Zone you requested.", typ)
	case fl.InstanceLimit > 0 && live >= fl.InstanceLimit:
		e = errorf(400, "InstanceLimitExceeded", "You have requested more instances (%d) than your current instance limit of %d allows.", live+1, fl.InstanceLimit)
	case fl.VCPULimit > 0 && vcpus+vcpusOf(fl, typ) > fl.VCPULimit:
		e = errorf(400, "VcpuLimitExceeded", "You have requested more vCPU capacity than your current vCPU limit of %d allows.", fl.VCPULimit)
	case scoped && !spot && scopeVCPUs+vcpusOf(fl, typ) > scopeLimit:
		e = errorf(400, "VcpuLimitExceeded", "You have requested more vCPU capacity than your current vCPU limit of %d allows for the instance bucket that the specified instance type belongs to.", scopeLimit)
	case scoped && spot && scopeVCPUs+vcpusOf(fl, typ) > scopeLimit:
		e = errorf(400, "MaxSpotInstanceCountExceeded", "Max spot instance count exceeded")
	case spot && fl.SpotLimit > 0 && spots >= fl.SpotLimit:
		e = errorf(400, "MaxSpotInstanceCountExceeded", "Max spot instance count exceeded")
	}
	if e != nil {
		s.mu.Unlock()
		return nil, e
	}
	in := &instance{
		id: s.newID("i"), typ: typ, subnet: subnet, keyName: keyName, public: public, spot: spot,
		tags: tags, volumeTags: volumeTags, user: user, secret: secret, authorized: authorized, devices: devices,
		iamProfile: iam, imdsv2: f.Get("MetadataOptions.HttpTokens") == "required",
		hopLimit: f.Get("MetadataOptions.HttpPutResponseHopLimit"),
		launched: now, listableAt: now.Add(fl.ListDelay), state: statePending,
	}
	var dies string
	if len(q.LaunchTerminations) > 0 {
		dies, q.LaunchTerminations = q.LaunchTerminations[0], q.LaunchTerminations[1:]
	}
	resID := s.newID("r")
	s.mu.Unlock()

	if dies == "" {
		if err := s.boot(in, key); err != nil {
			in.stop()
			return nil, errorf(500, "InternalError", "starting the instance: %v", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.instances[in.id] = in
	s.order = append(s.order, in.id)
	// Like EC2, the launch response has no public address yet, and an
	// instance that will not start is pending in it.
	resp := runInstancesResponse{
		Xmlns: xmlns, RequestID: reqID, ReservationID: resID, OwnerID: ownerID,
		Instances: []instanceElem{s.elem(in, false)},
	}
	if dies != "" {
		in.terminate(now)
		in.stateReason, in.stateMessage = dies, dies+": the instance could not be launched"
	}
	if token != "" {
		s.tokens[token] = launchToken{params: params, id: in.id, reservation: resID}
	}
	s.log.Info("ec2test: instance launched", "instance", in.id, "type", typ, "subnet", subnet, "spot", spot, "dies", dies)
	if fl.LostLaunchResponses > 0 {
		fl.LostLaunchResponses--
		return nil, errorf(500, "InternalError", "An internal error has occurred")
	}
	return resp, nil
}

// launchToken is what a client token was first used with (EC2's
// idempotency): a repeat with other parameters is refused, one with the
// same gets the instance it launched (none: it is tried again).
type launchToken struct {
	params, id, reservation string
}

// launchParams is a RunInstances request's parameters, less those that
// do not define what is launched (the token itself, the action, the API
// version), in a canonical form.
func launchParams(f url.Values) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		switch k {
		case "ClientToken", "Action", "Version":
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, f[k])
	}
	return b.String()
}

// repeatLaunch answers a RunInstances whose client token launched
// before, as EC2 does: the same instance for the same parameters, else
// IdempotentParameterMismatch. Called with s.mu held.
func (s *Server) repeatLaunch(prev launchToken, params, reqID string) (any, *apiError) {
	if prev.params != params {
		return nil, errorf(400, "IdempotentParameterMismatch", "The client token you have provided is associated with a resource that is already deleted or was used with different parameters.")
	}
	in := s.instances[prev.id]
	if fl := &s.faults; fl.LostLaunchResponses > 0 {
		fl.LostLaunchResponses--
		return nil, errorf(500, "InternalError", "An internal error has occurred")
	}
	return runInstancesResponse{
		Xmlns: xmlns, RequestID: reqID, ReservationID: prev.reservation, OwnerID: ownerID,
		Instances: []instanceElem{s.elem(in, false)},
	}, nil
}

// quotaScope is the vCPU quota a type counts against on demand or as
// spot: its family group's ("p/on-demand").
func quotaScope(typ string, spot bool) string {
	if spot {
		return ec2.QuotaGroup(typ) + "/spot"
	}
	return ec2.QuotaGroup(typ) + "/on-demand"
}

func vcpusOf(f *Faults, typ string) int {
	if n, ok := f.VCPUs[typ]; ok {
		return n
	}
	return 2
}

type reservationElem struct {
	ReservationID string         `xml:"reservationId"`
	OwnerID       string         `xml:"ownerId"`
	Instances     []instanceElem `xml:"instancesSet>item"`
}

type describeInstancesResponse struct {
	XMLName      xml.Name          `xml:"DescribeInstancesResponse"`
	Xmlns        string            `xml:"xmlns,attr"`
	RequestID    string            `xml:"requestId"`
	Reservations []reservationElem `xml:"reservationSet>item"`
	NextToken    string            `xml:"nextToken,omitempty"`
}

type filter struct {
	name   string
	values []string
}

func (flt filter) match(in *instance) (bool, *apiError) {
	var got []string
	switch {
	case flt.name == "tag-key":
		for k := range in.tags {
			got = append(got, k)
		}
	case strings.HasPrefix(flt.name, "tag:"):
		if v, ok := in.tags[strings.TrimPrefix(flt.name, "tag:")]; ok {
			got = []string{v}
		}
	case flt.name == "instance-state-name":
		got = []string{in.state}
	case flt.name == "instance-id":
		got = []string{in.id}
	case flt.name == "instance-type":
		got = []string{in.typ}
	default:
		return false, errorf(400, "InvalidParameterValue", "The filter '%s' is invalid", flt.name)
	}
	for _, g := range got {
		if slices.Contains(flt.values, g) {
			return true, nil
		}
	}
	return false, nil
}

func (s *Server) describeInstances(f url.Values, reqID string) (any, *apiError) {
	var filters []filter
	for _, m := range members(f, "Filter") {
		filters = append(filters, filter{f.Get(m + ".Name"), list(f, m+".Value")})
	}
	ids := list(f, "InstanceId")
	maxResults := 0
	if v := f.Get("MaxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 5 || n > 1000 {
			return nil, errorf(400, "InvalidParameterValue", "MaxResults must be between 5 and 1000")
		}
		if len(ids) > 0 {
			return nil, errorf(400, "InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
		}
		maxResults = n
	}
	start := 0
	if tok := f.Get("NextToken"); tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(tok, "page-"))
		if err != nil || !strings.HasPrefix(tok, "page-") {
			return nil, errorf(400, "InvalidParameterValue", "Invalid NextToken")
		}
		start = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var match []*instance
	for _, id := range s.order {
		in := s.instances[id]
		if now.Before(in.listableAt) || s.gone(in, now) {
			continue // not consistent yet, or forgotten
		}
		if len(ids) > 0 && !slices.Contains(ids, id) {
			continue
		}
		ok := true
		for _, flt := range filters {
			m, e := flt.match(in)
			if e != nil {
				return nil, e
			}
			ok = ok && m
		}
		if ok {
			match = append(match, in)
		}
	}
	resp := describeInstancesResponse{Xmlns: xmlns, RequestID: reqID}
	end := len(match)
	if maxResults > 0 && start+maxResults < len(match) {
		end = start + maxResults
		resp.NextToken = "page-" + strconv.Itoa(end)
	}
	for _, in := range match[min(start, len(match)):end] {
		if in.state == statePending && !now.Before(in.launched.Add(s.opts.BootDelay)) {
			in.state = stateRunning
		}
		if in.state == stateShuttingDown && !in.goneAt.IsZero() && !now.Before(in.goneAt) {
			in.terminate(now)
		}
		resp.Reservations = append(resp.Reservations, reservationElem{
			ReservationID: "r-" + strings.TrimPrefix(in.id, "i-"), OwnerID: ownerID,
			Instances: []instanceElem{s.elem(in, true)},
		})
	}
	return resp, nil
}

type instanceStateChange struct {
	InstanceID    string    `xml:"instanceId"`
	CurrentState  stateElem `xml:"currentState"`
	PreviousState stateElem `xml:"previousState"`
}

type terminateInstancesResponse struct {
	XMLName   xml.Name              `xml:"TerminateInstancesResponse"`
	Xmlns     string                `xml:"xmlns,attr"`
	RequestID string                `xml:"requestId"`
	Instances []instanceStateChange `xml:"instancesSet>item"`
}

func (s *Server) terminateInstances(f url.Values, reqID string) (any, *apiError) {
	ids := list(f, "InstanceId")
	if len(ids) == 0 {
		return nil, errorf(400, "MissingParameter", "InstanceId is required")
	}
	s.mu.Lock()
	var stop []*instance
	resp := terminateInstancesResponse{Xmlns: xmlns, RequestID: reqID}
	now := time.Now()
	for _, id := range ids {
		in, e := s.named(id, now)
		if e != nil {
			s.mu.Unlock()
			return nil, e
		}
		// EC2 answers shutting-down for a live instance, and terminated
		// for one already terminated.
		prev, cur := in.state, stateShuttingDown
		if prev == stateTerminated {
			cur = stateTerminated
		}
		in.terminate(now)
		stop = append(stop, in)
		resp.Instances = append(resp.Instances, instanceStateChange{
			InstanceID:   id,
			CurrentState: stateElem{stateCodes[cur], cur}, PreviousState: stateElem{stateCodes[prev], prev},
		})
	}
	s.mu.Unlock()
	for _, in := range stop {
		in.stop()
	}
	return resp, nil
}

type returnResponse struct {
	XMLName   xml.Name
	Xmlns     string `xml:"xmlns,attr"`
	RequestID string `xml:"requestId"`
	Return    bool   `xml:"return"`
}

func (s *Server) taggedInstances(f url.Values) ([]*instance, *apiError) {
	ids := list(f, "ResourceId")
	if len(ids) == 0 {
		return nil, errorf(400, "MissingParameter", "ResourceId is required")
	}
	var out []*instance
	now := time.Now()
	for _, id := range ids {
		in, e := s.named(id, now)
		if e != nil {
			return nil, e
		}
		out = append(out, in)
	}
	return out, nil
}

// named is the instance a call names, or InvalidInstanceID.NotFound: for
// an id never launched, one forgotten since its termination, and (IDLag)
// one that listings do not show yet. Called with s.mu held.
func (s *Server) named(id string, now time.Time) (*instance, *apiError) {
	in := s.instances[id]
	if in == nil || s.gone(in, now) || (s.quirks.IDLag && now.Before(in.listableAt)) {
		return nil, errorf(400, "InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
	}
	return in, nil
}

func (s *Server) createTags(f url.Values, reqID string) (any, *apiError) {
	tags := tagsOf(f, "Tag")
	s.mu.Lock()
	defer s.mu.Unlock()
	ins, e := s.taggedInstances(f)
	if e != nil {
		return nil, e
	}
	for _, in := range ins {
		for k, v := range tags {
			in.tags[k] = v
		}
	}
	return returnResponse{XMLName: xml.Name{Local: "CreateTagsResponse"}, Xmlns: xmlns, RequestID: reqID, Return: true}, nil
}

func (s *Server) deleteTags(f url.Values, reqID string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ins, e := s.taggedInstances(f)
	if e != nil {
		return nil, e
	}
	for _, m := range members(f, "Tag") {
		k := f.Get(m + ".Key")
		v, hasValue := f[m+".Value"]
		for _, in := range ins {
			if !hasValue || in.tags[k] == v[0] {
				delete(in.tags, k)
			}
		}
	}
	return returnResponse{XMLName: xml.Name{Local: "DeleteTagsResponse"}, Xmlns: xmlns, RequestID: reqID, Return: true}, nil
}

type keyPairElem struct {
	KeyPairID   string `xml:"keyPairId"`
	KeyName     string `xml:"keyName"`
	Fingerprint string `xml:"keyFingerprint"`
}

type describeKeyPairsResponse struct {
	XMLName   xml.Name      `xml:"DescribeKeyPairsResponse"`
	Xmlns     string        `xml:"xmlns,attr"`
	RequestID string        `xml:"requestId"`
	Keys      []keyPairElem `xml:"keySet>item"`
}

func (s *Server) describeKeyPairs(f url.Values, reqID string) (any, *apiError) {
	names := list(f, "KeyName")
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := describeKeyPairsResponse{Xmlns: xmlns, RequestID: reqID}
	if len(names) == 0 {
		for n := range s.keyPairs {
			names = append(names, n)
		}
		slices.Sort(names)
	}
	for _, n := range names {
		fp, ok := s.keyPairs[n]
		if !ok {
			return nil, errorf(400, "InvalidKeyPair.NotFound", "The key pair '%s' does not exist", n)
		}
		resp.Keys = append(resp.Keys, keyPairElem{KeyPairID: "key-" + n, KeyName: n, Fingerprint: fp})
	}
	return resp, nil
}

type importKeyPairResponse struct {
	XMLName     xml.Name `xml:"ImportKeyPairResponse"`
	Xmlns       string   `xml:"xmlns,attr"`
	RequestID   string   `xml:"requestId"`
	KeyPairID   string   `xml:"keyPairId"`
	KeyName     string   `xml:"keyName"`
	Fingerprint string   `xml:"keyFingerprint"`
}

func (s *Server) importKeyPair(f url.Values, reqID string) (any, *apiError) {
	name := f.Get("KeyName")
	material, err := base64.StdEncoding.DecodeString(f.Get("PublicKeyMaterial"))
	if name == "" || err != nil {
		return nil, errorf(400, "MissingParameter", "KeyName and PublicKeyMaterial (base64) are required")
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey(material)
	if err != nil || (key.Type() != ssh.KeyAlgoRSA && key.Type() != ssh.KeyAlgoED25519) {
		// EC2 imports RSA and ED25519 keys only.
		return nil, errorf(400, "InvalidKey.Format", "Key is not in valid OpenSSH public key format")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.keyPairs[name]; dup {
		return nil, errorf(400, "InvalidKeyPair.Duplicate", "The keypair '%s' already exists.", name)
	}
	fp := ssh.FingerprintSHA256(key)
	s.keyPairs[name] = fp
	s.keyImported[name] = time.Now()
	return importKeyPairResponse{Xmlns: xmlns, RequestID: reqID, KeyPairID: "key-" + name, KeyName: name, Fingerprint: fp}, nil
}

type imageElem struct {
	ImageID        string `xml:"imageId"`
	RootDeviceName string `xml:"rootDeviceName"`
	RootDeviceType string `xml:"rootDeviceType"`
	State          string `xml:"imageState"`
}

type describeImagesResponse struct {
	XMLName   xml.Name    `xml:"DescribeImagesResponse"`
	Xmlns     string      `xml:"xmlns,attr"`
	RequestID string      `xml:"requestId"`
	Images    []imageElem `xml:"imagesSet>item"`
}

func (s *Server) describeImages(f url.Values, reqID string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := describeImagesResponse{Xmlns: xmlns, RequestID: reqID}
	for _, id := range list(f, "ImageId") {
		root, ok := s.images[id]
		if !ok {
			return nil, errorf(400, "InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
		}
		resp.Images = append(resp.Images, imageElem{ImageID: id, RootDeviceName: root, RootDeviceType: "ebs", State: "available"})
	}
	return resp, nil
}
