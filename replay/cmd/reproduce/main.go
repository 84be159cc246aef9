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
	only := flag.String("only", "", "regenerate one reproduction only: "+replay.MixDir)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *only != "" {
		if *only != replay.MixDir {
			fmt.Fprintf(os.Stderr, "reproduce: -only %q: want %s\n", *only, replay.MixDir)
			os.Exit(2)
		}
		if _, err := replay.ReproduceMix(ctx, *out, replay.DefaultMixOptions(), os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "reproduce:", err)
			os.Exit(1)
		}
		return
	}
	if err := replay.Reproduce(ctx, *out, *data, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "reproduce:", err)
		os.Exit(1)
	}
}
