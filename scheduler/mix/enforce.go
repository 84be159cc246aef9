package mix

// What a node does to enforce the ratio, as pure decisions; nodes/cgmix
// carries them out with cgroups.

// Weights are the CPU weights of the RT and BE groups for ps mode: x:y on
// a scale of 2048, each at least 2 (the smallest cgroup v1 cpu.shares), so
// a class with no share still runs when the other has nothing ready
// (DESIGN.md §1: either class may use all of a node the other leaves).
func (r Ratio) Weights() (rt, be int) {
	total := r.X + r.Y
	rt = max(2, (2048*r.X+total/2)/total)
	be = max(2, (2048*r.Y+total/2)/total)
	return rt, be
}

// SystemdWeights are the CPUWeight of the RT and BE slices for ps mode on
// systemd nodes (cgroup v2 cpu.weight, 1..10000): x:y on a scale of 10000,
// each at least 1, for the same reason as Weights.
func (r Ratio) SystemdWeights() (rt, be int) {
	total := r.X + r.Y
	rt = max(1, (10000*r.X+total/2)/total)
	be = max(1, (10000*r.Y+total/2)/total)
	return rt, be
}

// TDMFreeze says which classes a node stops in the division owned by owner
// (2DCS-TDM, be-rt-mix-2001 §4.2): the other class while the owner has
// processes; nobody when the owner has none — the division is lent — so a
// class is never stopped for an owner that has nothing to run.
func TDMFreeze(owner Class, rtHas, beHas bool) (freeze [2]bool) {
	has := [2]bool{rtHas, beHas}
	if has[owner] {
		freeze[owner.Other()] = has[owner.Other()]
	}
	return freeze
}

// TDMFreezeAt says which classes a node stops at time now under plan t,
// and when that next changes: TDMFreeze for the division in force, except
// during its synchronisation δ (be-rt-mix-2001 §4.2: "every division
// starts with a global synchronisation of cost δ"), when neither class
// runs on a node where both have processes. Real nodes use δ as a guard:
// with δ above the switch skew between nodes, no node runs the new
// division's class while another still runs the old one.
func TDMFreezeAt(t TDM, now float64, rtHas, beHas bool) (freeze [2]bool, next float64) {
	owner, end, syncEnd := t.At(now)
	if now < syncEnd {
		both := rtHas && beHas
		return [2]bool{both, both}, syncEnd
	}
	return TDMFreeze(owner, rtHas, beHas), end
}
