// The hash of the runner binary, which names its version.

package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// ExecutableHash returns the sha256 (hex) of the running executable.
func ExecutableHash() (string, error) {
	path, err := os.Executable()
	if err != nil {
		return "", err
	}
	return FileHash(path)
}

// FileHash returns the sha256 (hex) of the file at path: what "runner
// version" reports for a runner installed from it.
func FileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
