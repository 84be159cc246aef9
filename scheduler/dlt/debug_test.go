package dlt

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

func TestDebugWorkload(t *testing.T) {
	alg := os.Getenv("DLT_ALG")
	if alg == "" {
		return
	}
	k, _ := strconv.Atoi(os.Getenv("DLT_K"))
	r := rand.New(rand.NewPCG(1, uint64(len(alg))))
	var w workload
	for range k + 1 {
		w = genWorkload(r, 10+r.IntN(40))
	}
	debugSim = func(f string, a ...any) { t.Logf(f, a...) }
	acDebug = debugSim
	defer func() { acDebug = nil }()
	defer func() { debugSim = nil }()
	res := simulate(alg, w, nil)
	t.Logf("%v %+v", w, res)
}
