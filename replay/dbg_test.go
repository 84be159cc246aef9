package replay

import (
	"path/filepath"
	"testing"

	"hora/replay/swf"
)

func TestDbg(t *testing.T) {
	for _, f := range []string{"CTC-SP2", "KTH-SP2", "SDSC-SP2"} {
		lg, _ := swf.ReadFile(filepath.Join(dataDir, "easy-reference", f+".pyss-easy-reqtime.out.swf.gz"), swf.Lenient)
		w, _ := FromSWF(lg)
		o, _ := Simulate(t.Context(), w, Options{Engine: "reference"})
		best := -1
		bt := 1e18
		for i, j := range w.Jobs {
			r := o.Results[i]
			ref := j.Submit + j.RecordedWait
			if r.Start != ref && min(r.Start, ref) < bt {
				bt, best = min(r.Start, ref), i
			}
		}
		j := w.Jobs[best]
		t.Logf("%s first divergence in time: job %d sub %.0f mine %.0f ref %.0f p %d lim %.0f run %.0f", f, j.ID, j.Submit, o.Results[best].Start, j.Submit+j.RecordedWait, j.Procs, j.Limit, j.Run)
		for i, k := range w.Jobs {
			r := o.Results[i]
			ref := k.Submit + k.RecordedWait
			if r.End >= bt-2 && r.End <= bt+2 || ref+k.Run >= bt-2 && ref+k.Run <= bt+2 || k.Submit >= bt-2 && k.Submit <= bt+2 || r.Start == bt || ref == bt {
				t.Logf("   %d sub %.0f mine %.0f-%.0f ref %.0f-%.0f p %d lim %.0f", k.ID, k.Submit, r.Start, r.End, ref, ref+k.Run, k.Procs, k.Limit)
			}
		}
	}
}
