package scheduler

// Policy returns the policy instance of a partition, for a driver that keeps
// policy-specific state beside the job stream (the reserve policy's advance
// reservations, which the controller creates, restores and deletes). A driver
// that changes a policy this way sends a Tick afterwards so that a pass runs.
func (e *Engine) Policy(partition string) (Policy, bool) {
	if p := e.partName[partition]; p != nil {
		return p.policy, true
	}
	return nil, false
}
