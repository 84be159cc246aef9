package reserve

// CoPlan is the online co-allocation probe of the thesis (ch. 5, §5.1 and
// §5.4) without a booking: n nodes idle together for work ticks from
// s = release + k·Δt, k = 0, 1, …, maxRet (Config.DeltaT, Config.MaxRet),
// whatever n, one node included (Plan finds a single node's exact earliest
// start instead, off the Δt grid). It returns the first such s and k, the
// number of retries — the times the scheduler increased s_r, the count of
// Table 5.3. A request that no start within the maxRet retries can hold
// gets a *Refusal with retries = maxRet; one that can never be held (too
// many nodes, no work) gets a Never refusal and 0 retries. The index is
// not changed: the caller books, or not (Occupy), as its model needs.
func (ix *Index) CoPlan(release, work int64, n int) (start int64, retries int, err error) {
	r, d, w, ref := ix.norm(Request{Release: release, Work: work, Nodes: n})
	if ref != nil {
		return 0, 0, ref
	}
	for k := 0; k <= ix.cfg.MaxRet; k++ {
		s := r + int64(k)*ix.cfg.DeltaT
		if ix.coFeasible(s, d, w, n) != nil {
			return s, k, nil
		}
	}
	return 0, ix.cfg.MaxRet, &Refusal{Reason: "no start within maxRet retries holds the request",
		EarliestStart: r + int64(ix.cfg.MaxRet+1)*ix.cfg.DeltaT}
}
