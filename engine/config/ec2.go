// [cloud.ec2]: the Amazon EC2 driver's keys and their checks.

package config

import (
	"net/url"
	"strings"
	"time"
)

var ec2Keys = []*row{
	str("cloud.ec2.region", "", func(c *Config, _ int) *string { return &c.Cloud.EC2.Region },
		"region of the instances", requiredByEC2),
	str("cloud.ec2.profile", "", func(c *Config, _ int) *string { return &c.Cloud.EC2.Profile },
		`shared-config profile; "" = the default credential chain`),
	str("cloud.ec2.endpoint", "", func(c *Config, _ int) *string { return &c.Cloud.EC2.Endpoint },
		`EC2 API endpoint URL; "" = AWS's for the region`, endpointURL),
	str("cloud.ec2.image_id", "", func(c *Config, _ int) *string { return &c.Cloud.EC2.ImageID },
		"the AMI the instances boot", requiredByEC2, amiID),
	commented(strs("cloud.ec2.subnet_ids", nil, func(c *Config, _ int) *[]string { return &c.Cloud.EC2.SubnetIDs },
		"subnets to launch in, tried in turn", idList("subnet-"))),
	commented(strs("cloud.ec2.security_group_ids", nil, func(c *Config, _ int) *[]string { return &c.Cloud.EC2.SecurityGroupIDs },
		"security groups of the instances", idList("sg-"))),
	str("cloud.ec2.key_pair_name", "", func(c *Config, _ int) *string { return &c.Cloud.EC2.KeyPairName },
		`EC2 key pair to launch with; "" = none`, noQuoteOrNewline),
	str("cloud.ec2.admin_user", "dispatch-tui", func(c *Config, _ int) *string { return &c.Cloud.EC2.AdminUser },
		"user the user-data creates and the dispatcher logs in as", userName),
	size("cloud.ec2.root_volume_size", 0, func(c *Config, _ int) *int64 { return &c.Cloud.EC2.RootVolumeSize },
		"size of the root volume; 0 = the image's", rootVolumeSize),
	str("cloud.ec2.root_volume_type", "gp3", func(c *Config, _ int) *string { return &c.Cloud.EC2.RootVolumeType },
		"EBS type of the root volume", oneOf(ebsVolumeTypes...)),
	str("cloud.ec2.scratch_volume_type", "gp3", func(c *Config, _ int) *string { return &c.Cloud.EC2.ScratchVolumeType },
		"EBS type of the scratch volume", oneOf(ebsVolumeTypes...)),
	str("cloud.ec2.iam_instance_profile", "", func(c *Config, _ int) *string { return &c.Cloud.EC2.IAMInstanceProfile },
		`IAM instance profile of the instances; "" = none`),
	commented(strMap("cloud.ec2.tags", nil, func(c *Config, _ int) *map[string]string { return &c.Cloud.EC2.Tags },
		"extra tags on every instance and its volumes", ec2Tags)),
	boolean("cloud.ec2.use_private_ip", false, func(c *Config, _ int) *bool { return &c.Cloud.EC2.UsePrivateIP },
		"reach the instances at their private address"),
	boolean("cloud.ec2.imdsv2_required", true, func(c *Config, _ int) *bool { return &c.Cloud.EC2.IMDSv2Required },
		"may only be true; kept so that old configs load", imdsv2),
	integer("cloud.ec2.metadata_hop_limit", 1, func(c *Config, _ int) *int { return &c.Cloud.EC2.MetadataHopLimit },
		"hops a metadata token may travel; EC2 accepts 1 to 64, and above 1 a container on a docker bridge gets one", between(1, 64)),
	duration("cloud.ec2.spot_price_interval", 5*time.Minute, func(c *Config, _ int) *time.Duration { return &c.Cloud.EC2.SpotPriceInterval },
		"how often the spot prices of the spot types in use are read, to bill spot instances at them", atLeastASecond),
}

// EBS volume types.
var ebsVolumeTypes = []string{"gp3", "gp2", "io2", "io1", "st1", "sc1", "standard"}

func requiredByEC2(v string, s *site) {
	if v == "" && s.c.Cloud.Driver == "ec2" {
		s.bad("required by driver \"ec2\"")
	}
}

func amiID(v string, s *site) {
	if v != "" && !strings.HasPrefix(v, "ami-") {
		s.bad("must be an AMI id like \"ami-0abc...\" (got %q)", v)
	}
}

func endpointURL(v string, s *site) {
	if v == "" {
		return
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		s.bad("must be an http(s) URL like \"https://ec2.eu-west-1.amazonaws.com\" (got %q)", v)
	}
}

// idList checks a list of AWS ids with the given prefix: none empty, none
// twice.
func idList(prefix string) check[[]string] {
	return func(ids []string, s *site) {
		seen := map[string]bool{}
		for i, id := range ids {
			switch {
			case !strings.HasPrefix(id, prefix) || len(id) == len(prefix):
				s.bad("element %d must be an id like \"%s0abc...\" (got %q)", i, prefix, id)
			case seen[id]:
				s.bad("element %d: %q is listed twice", i, id)
			}
			seen[id] = true
		}
	}
}

func noQuoteOrNewline(v string, s *site) {
	if strings.ContainsAny(v, "\n'") {
		s.bad("must not contain a quote or newline (got %q)", v)
	}
}

func rootVolumeSize(v int64, s *site) {
	if v != 0 && v < giB {
		s.bad("must be 0 (the image's size) or at least 1GiB (got %d bytes)", v)
	}
}

func imdsv2(v bool, s *site) {
	if !v {
		s.bad("the instances' metadata service always requires tokens now (without them containers could read the instance secret): remove this key")
	}
}

func ec2Tags(tags map[string]string, s *site) {
	for _, k := range sortedKeys(tags) {
		switch {
		case k == "" || len(k) > 128:
			s.badEntry(k, "tag keys must be 1 to 128 characters")
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			s.badEntry(k, "tag keys starting with aws: are reserved by AWS")
		case strings.HasPrefix(k, "dispatch-tui-"):
			s.badEntry(k, "tag keys starting with dispatch-tui- are the dispatcher's own")
		case len(tags[k]) > 256:
			s.badEntry(k, "tag values must be at most 256 characters")
		}
	}
}
