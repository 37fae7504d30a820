// Killing a timed-out command where there are no process groups.

//go:build !unix

package script

// Without process groups only the program named is killed.

import "os/exec"

func ownGroup(*exec.Cmd) {}

func killGroup(*exec.Cmd) {}
