// Command reproduce regenerates docs/reproductions/ (`make reproduce`):
// see replay.Reproduce.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"hora/replay"

	"hora/replay/swf"
)

func main() {
	out := flag.String("out", "docs/reproductions", "output directory")
	data := flag.String("data", swf.SharedDataDir(), "directory of the SWF logs (with easy-reference/)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := replay.Reproduce(ctx, *out, *data, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "reproduce:", err)
		os.Exit(1)
	}
}
