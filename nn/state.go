package nn

// AdamState is Adam's state: the number of steps taken and the first and second moments per
// parameter name (what a checkpoint must carry for a bit-identical resume).
type AdamState struct {
	Step int
	M, V map[string][]float64
}

// State returns the optimiser's state (sharing its slices).
func (a *Adam) State() AdamState { return AdamState{Step: a.step, M: a.m, V: a.v} }

// SetState replaces the optimiser's state.
func (a *Adam) SetState(s AdamState) {
	a.step = s.Step
	a.m, a.v = s.M, s.V
	if a.m == nil {
		a.m = map[string][]float64{}
	}
	if a.v == nil {
		a.v = map[string][]float64{}
	}
}
