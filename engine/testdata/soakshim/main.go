// Command soakshim is the script driver's every command in the chaos soak
// (engine/soak_script_test.go), "soakshim SOCKET VERB": it sends its verb
// and stdin to the test over the unix socket and acts out the reply, the
// JSON of the test's shimReply. A small binary of its own, so that a call
// costs a fork and exec, not the start of the race-built test binary.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: soakshim SOCKET VERB")
		os.Exit(2)
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soakshim: read stdin:", err)
		os.Exit(1)
	}
	c, err := net.Dial("unix", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "soakshim:", err)
		os.Exit(1)
	}
	req := map[string]any{"verb": os.Args[2], "input": json.RawMessage(in)}
	if len(in) == 0 {
		req["input"] = json.RawMessage("null")
	}
	if err := json.NewEncoder(c).Encode(req); err != nil {
		fmt.Fprintln(os.Stderr, "soakshim:", err)
		os.Exit(1)
	}
	var rep struct {
		Stdout, Stderr string
		Exit           int
		Hang           bool
	}
	if err := json.NewDecoder(c).Decode(&rep); err != nil {
		fmt.Fprintln(os.Stderr, "soakshim: no reply:", err)
		os.Exit(1)
	}
	os.Stdout.WriteString(rep.Stdout)
	os.Stderr.WriteString(rep.Stderr)
	if rep.Hang {
		time.Sleep(time.Hour) // until the driver's timeout kills it
	}
	os.Exit(rep.Exit)
}
