// Command forkfloor prints the machine's fork+exec+wait floor: how many
// times a second parallel spawners can start /usr/bin/true and reap it
// (engine/forkfloor). make bench-e2e measures the same floor around its
// run; this is for measuring it alone:
//
//	go run ./tools/forkfloor -d 5s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"dispatch-tui/engine/forkfloor"
)

func main() {
	d := flag.Duration("d", 5*time.Second, "how long to spawn")
	spawners := flag.Int("spawners", runtime.NumCPU(), "parallel spawners")
	cmd := flag.String("command", forkfloor.DefaultCommand, "the command to spawn (no arguments)")
	flag.Parse()
	r, err := forkfloor.Measure(context.Background(), *cmd, *spawners, *d)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(r)
}
