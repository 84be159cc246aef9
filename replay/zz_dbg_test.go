package replay

import (
	"path/filepath"
	"testing"

	"hora/replay/swf"
)

func TestZZDbg(t *testing.T) {
	lg, _ := swf.ReadFile(filepath.Join(dataDir, "easy-reference", "CTC-SP2.pyss-easy-reqtime.out.swf.gz"), swf.Lenient)
	w, _ := FromSWF(lg)
	ref := make([]float64, len(w.Jobs))
	for i := range w.Jobs {
		ref[i] = w.Jobs[i].Submit + w.Jobs[i].RecordedWait
		w.Jobs[i].RecordedWait = -1
	}
	o, err := Simulate(t.Context(), w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	T := 5248317.0
	t.Logf("procs %d", w.Procs)
	busy := 0
	for i, j := range w.Jobs {
		r := o.Results[i]
		if ref[i] <= T && ref[i]+j.Run > T {
			busy += j.Procs
		}
		if ref[i] == T || r.Start == T || ref[i]+j.Run == T || (j.Submit <= T && (ref[i] >= T || r.Start >= T) && j.Submit > T-5000) {
			t.Logf("job %d submit %.0f procs %d run %.0f limit %.0f | ref start %.0f end %.0f | hora start %.0f", j.ID, j.Submit, j.Procs, j.Run, j.Limit, ref[i], ref[i]+j.Run, r.Start)
		}
	}
	t.Logf("busy after T per ref: %d", busy)
}
