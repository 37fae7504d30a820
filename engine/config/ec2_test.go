package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseEC2(t *testing.T) {
	c, err := Parse([]byte(`
[cloud]
driver = "ec2"
[cloud.ec2]
region = "eu-west-1"
profile = "batch"
endpoint = "https://ec2.eu-west-1.amazonaws.com"
image_id = "ami-0123456789abcdef0"
subnet_ids = ["subnet-aaa", "subnet-bbb"]
security_group_ids = ["sg-111"]
key_pair_name = "ops"
admin_user = "crunch"
root_volume_size = "30GiB"
root_volume_type = "gp2"
scratch_volume_type = "io2"
iam_instance_profile = "arn:aws:iam::123456789012:instance-profile/worker"
tags = { project = "genomics", Name = "worker" }
use_private_ip = true
imdsv2_required = true
metadata_hop_limit = 2
`), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := EC2Driver{
		Region: "eu-west-1", Profile: "batch", Endpoint: "https://ec2.eu-west-1.amazonaws.com",
		ImageID: "ami-0123456789abcdef0", SubnetIDs: []string{"subnet-aaa", "subnet-bbb"},
		SecurityGroupIDs: []string{"sg-111"}, KeyPairName: "ops", AdminUser: "crunch",
		RootVolumeSize: 30 << 30, RootVolumeType: "gp2", ScratchVolumeType: "io2",
		IAMInstanceProfile: "arn:aws:iam::123456789012:instance-profile/worker",
		Tags:               map[string]string{"project": "genomics", "Name": "worker"},
		UsePrivateIP:       true,
		IMDSv2Required:     true,
		MetadataHopLimit:   2,
		SpotPriceInterval:  5 * time.Minute,
	}
	if !reflect.DeepEqual(c.Cloud.EC2, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", c.Cloud.EC2, want)
	}
}

func TestEC2Errors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"required", `
[cloud]
driver = "ec2"
`, []string{
			`config.toml:2: cloud.ec2.region: required by driver "ec2"`,
			`config.toml:2: cloud.ec2.image_id: required by driver "ec2"`,
		}},
		{"not required by other drivers", `
[cloud]
driver = "local"
`, nil},
		{"values", `
[cloud.ec2]
image_id = "img-1"
endpoint = "ec2.amazonaws.com"
subnet_ids = ["subnet-a", "vpc-b", "subnet-a"]
security_group_ids = ["default"]
admin_user = "Root"
root_volume_size = "100MiB"
root_volume_type = "ssd"
tags = { "aws:x" = "1", "dispatch-tui-owner" = "me" }
`, []string{
			`config.toml:3: cloud.ec2.image_id: must be an AMI id`,
			`config.toml:4: cloud.ec2.endpoint: must be an http(s) URL`,
			`config.toml:5: cloud.ec2.subnet_ids: element 1 must be an id like "subnet-0abc..." (got "vpc-b")`,
			`config.toml:5: cloud.ec2.subnet_ids: element 2: "subnet-a" is listed twice`,
			`config.toml:6: cloud.ec2.security_group_ids: element 0 must be an id like "sg-0abc..."`,
			`config.toml:7: cloud.ec2.admin_user: must be a user name`,
			`config.toml:8: cloud.ec2.root_volume_size: must be 0`,
			`config.toml:9: cloud.ec2.root_volume_type: must be "gp3", "gp2"`,
			`config.toml:10: cloud.ec2.tags."aws:x": tag keys starting with aws: are reserved`,
			`config.toml:10: cloud.ec2.tags.dispatch-tui-owner: tag keys starting with dispatch-tui- are the dispatcher's own`,
		}},
		{"metadata service", `
[cloud.ec2]
imdsv2_required = false
metadata_hop_limit = 0
`, []string{
			`config.toml:3: cloud.ec2.imdsv2_required: the instances' metadata service always requires tokens now`,
			`config.toml:4: cloud.ec2.metadata_hop_limit: must be between 1 and 64 (got 0)`,
		}},
		{"hop limit above EC2's", `
[cloud.ec2]
metadata_hop_limit = 65
`, []string{`config.toml:3: cloud.ec2.metadata_hop_limit: must be between 1 and 64 (got 65)`}},
		{"spot price interval", `
[cloud.ec2]
spot_price_interval = "100ms"
`, []string{`config.toml:3: cloud.ec2.spot_price_interval: must be at least 1s (got 100ms)`}},
		{"types", `
[cloud.ec2]
subnet_ids = "subnet-a"
security_group_ids = [1]
tags = { a = 1 }
`, []string{
			`config.toml:3: cloud.ec2.subnet_ids: must be an array of strings`,
			`config.toml:4: cloud.ec2.security_group_ids: element 0 must be a string (got integer)`,
			`config.toml:5: cloud.ec2.tags.a: must be a string (got integer)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "config.toml")
			var got []string
			if err != nil {
				for _, e := range err.(Errors) {
					got = append(got, e.Error())
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("error %d:\n got %s\nwant %s...", i, got[i], tc.want[i])
				}
			}
		})
	}
}
