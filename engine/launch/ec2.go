// The EC2 driver built from [cloud] and [cloud.ec2].

package launch

import (
	"context"
	"fmt"
	"log/slog"

	"dispatch-tui/cloud/ec2"
	"dispatch-tui/engine/config"
)

// newEC2 builds the EC2 driver from [cloud] and [cloud.ec2]: the cloud
// drivers do not read the config.
func newEC2(cfg *config.Config, log *slog.Logger) (*ec2.Driver, error) {
	signer, err := clientKey(cfg, "ec2")
	if err != nil {
		return nil, err
	}
	e := cfg.Cloud.EC2
	d, err := ec2.New(context.Background(), ec2.Options{
		Region: e.Region, Profile: e.Profile, Endpoint: e.Endpoint, ImageID: e.ImageID,
		SubnetIDs: e.SubnetIDs, SecurityGroupIDs: e.SecurityGroupIDs, KeyPairName: e.KeyPairName,
		Signer: signer, AdminUser: e.AdminUser, SSHPort: cfg.Cloud.SSHPort,
		RootVolumeSize: e.RootVolumeSize, RootVolumeType: e.RootVolumeType,
		ScratchVolumeType: e.ScratchVolumeType, IAMInstanceProfile: e.IAMInstanceProfile,
		Tags: e.Tags, UsePrivateIP: e.UsePrivateIP, MetadataHopLimit: int32(e.MetadataHopLimit),
		SpotPriceInterval: e.SpotPriceInterval, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("start ec2 driver: %w", err)
	}
	return d, nil
}
