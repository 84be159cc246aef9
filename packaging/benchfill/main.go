// Command benchfill submits N held jobs to a horad, for the socket-activation
// benchmark of make package-test (docs/benchmarks.md): the first squeue after
// horad was stopped must wait for horad to start and recover them all.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"

	"hora/api"
)

func main() {
	n := flag.Int("n", 100000, "number of held jobs")
	sock := flag.String("socket", "/run/hora/horad.sock", "horad's socket")
	workers := flag.Int("workers", 8, "concurrent submitters")
	flag.Parse()
	cl := api.NewClient(*sock)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < *n; i += *workers {
				_, err := cl.Submit(context.Background(), api.SubmitRequest{Spec: api.JobSpec{
					Name: "fill" + strconv.Itoa(i), Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Hold: true}})
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		fmt.Fprintln(os.Stderr, "benchfill:", firstErr)
		os.Exit(1)
	}
}
