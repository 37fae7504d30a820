//go:build linux

package ec2_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud/ec2/ec2test"
)

// Instances launch without an EC2 key pair unless one is configured: the
// user-data authorizes the dispatcher's key, whatever its type (EC2
// imports RSA and ED25519 keys only), and a key pair just imported, which
// RunInstances may not know yet, cannot fail a create.
func TestNoKeyPairUnlessConfigured(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	srv.SetQuirks(func(q *ec2test.Quirks) { q.KeyPairLag = time.Hour })
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecdsaSigner, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		signer ssh.Signer
	}{{"ed25519", newSigner(t)}, {"ecdsa", ecdsaSigner}} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, driverOptions(srv, tc.signer))
			inst, err := d.Create(ctx, small, tagsFor(small, "key-"+tc.name))
			if err != nil {
				t.Fatalf("create with a %s key: %v", tc.name, err)
			}
			for _, in := range srv.Instances() {
				if in.ID == string(inst.ID()) && in.KeyName != "" {
					t.Fatalf("launched with key pair %q, want none", in.KeyName)
				}
			}
			if _, err := d.Instances(ctx, nil); err != nil {
				t.Fatal(err)
			}
			x, err := d.Executor(inst)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			if out, _, err := x.Execute(ctx, "cat .dispatch-tui-secret", nil); err != nil || string(out) != "key-"+tc.name+"\n" {
				t.Fatalf("execute with the %s key: %q, %v", tc.name, out, err)
			}
		})
	}
	if n := srv.Calls("ImportKeyPair") + srv.Calls("DescribeKeyPairs"); n != 0 {
		t.Fatalf("%d key pair calls, want none", n)
	}

	// A configured key pair is launched with: one the operator imported
	// through EC2's own ImportKeyPair, long enough ago to be known.
	signer := newSigner(t)
	srv.SetQuirks(func(q *ec2test.Quirks) { q.KeyPairLag = 0 })
	operator := awsec2.New(awsec2.Options{
		Region:       ec2test.Region,
		BaseEndpoint: aws.String(srv.URL()),
		Credentials:  credentials.NewStaticCredentialsProvider(ec2test.AccessKeyID, ec2test.SecretAccessKey, ""),
	})
	if _, err := operator.ImportKeyPair(ctx, &awsec2.ImportKeyPairInput{
		KeyName: aws.String("operators-key"), PublicKeyMaterial: ssh.MarshalAuthorizedKey(signer.PublicKey()),
	}); err != nil {
		t.Fatalf("import the operator's key pair: %v", err)
	}
	opts := driverOptions(srv, signer)
	opts.KeyPairName = "operators-key"
	inst, err := newDriver(t, opts).Create(ctx, small, tagsFor(small, "key-configured"))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range srv.Instances() {
		if in.ID == string(inst.ID()) && in.KeyName != "operators-key" {
			t.Fatalf("launched with key pair %q, want operators-key", in.KeyName)
		}
	}
}
