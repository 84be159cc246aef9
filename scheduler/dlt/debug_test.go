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

func TestDebugEarliest(t *testing.T) {
	if os.Getenv("DLT_E") == "" {
		return
	}
	w := genWorkload(rand.New(rand.NewPCG(0, 1)), 3)
	s, _ := New("edf-dlt", w.m, w.n)
	for _, tk := range w.tasks {
		err := s.Admit(tk.Arrival, tk)
		t.Logf("%+v %v %v", tk, err, w)
		if err != nil {
			for _, f := range []float64{1, 2, 10, 100, 1e4} {
				u := tk
				u.Deadline = tk.Arrival + (tk.Deadline-tk.Arrival)*f
				ok, why := s.alg.admit(s, tk.Arrival, u, false)
				t.Logf("f=%g %v %s", f, ok, why)
			}
		}
		s.Dispatch(tk.Arrival)
	}
}
