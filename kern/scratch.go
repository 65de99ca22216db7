package kern

// What a product's gradient pass (LinearGrad32, or MatMulNT and MatMulTN) keeps in its Scratch,
// known from the shapes: an executor that shares one Scratch between the products it runs one at
// a time holds the largest need of every part (ScratchNeed.Max).

// ScratchNeed is the size, in values, of each buffer of a Scratch.
type ScratchNeed struct {
	XT, GT          int // the transposed copies
	Parts, PartSize int // MatMulTN's generic partial sums
	TNParts, TNSize int // sgemmTN's and LinearGrad32's partial sums
	TNPad           int // the padded narrow input, or the transposed w
}

// Max is the need of a Scratch shared by n and o.
func (n ScratchNeed) Max(o ScratchNeed) ScratchNeed {
	return ScratchNeed{XT: max(n.XT, o.XT), GT: max(n.GT, o.GT), Parts: max(n.Parts, o.Parts), PartSize: max(n.PartSize, o.PartSize),
		TNParts: max(n.TNParts, o.TNParts), TNSize: max(n.TNSize, o.TNSize), TNPad: max(n.TNPad, o.TNPad)}
}

// Values is the need in values (an upper bound: every part at the largest size).
func (n ScratchNeed) Values() int64 {
	return int64(n.XT) + int64(n.GT) + int64(n.Parts)*int64(n.PartSize) + int64(n.TNParts)*int64(n.TNSize) + int64(n.TNPad)
}

// ProductGradNeed is what the gradient pass of y = x·w for x [m, a], w [a, b] keeps in its
// Scratch, in float32 (f32) or float64, computing dx (withDX) and dw.
func ProductGradNeed(m, a, b int, f32, withDX bool) ScratchNeed {
	mr := micro.rows
	kernel := f32 && mr > 0 && haveKernel
	if kernel && m >= mr && a >= max(mr, nr) && b >= nr { // LinearGrad32
		_, _, _, size := tnLayout(mr, a, b)
		return ScratchNeed{TNParts: Parts((m + linChunk - 1) / linChunk), TNSize: size + b, TNPad: a * b}
	}
	var need ScratchNeed
	if withDX && kernel && m >= mr && a >= nr && b > 0 { // MatMulNT
		need.XT = a * b
	}
	return need.Max(tnNeed(m, a, b, kernel))
}

// tnNeed is MatMulTN's need for out [a, b] = xᵀ·g, x [m, a].
func tnNeed(m, a, b int, kernel bool) ScratchNeed {
	mr := micro.rows
	if !kernel || a < 1 || b < nr {
		const blk = 2048
		return ScratchNeed{XT: m * a, GT: m * b, Parts: Parts((m + blk - 1) / blk), PartSize: a * b}
	}
	var need ScratchNeed
	rows := a
	if a < mr {
		need.TNPad, rows = m*mr+mr*b, mr
	}
	const rowsPer = 4 * tnChunk
	_, _, _, size := tnLayout(mr, rows, b)
	need.TNParts, need.TNSize = Parts((m+rowsPer-1)/rowsPer), size
	return need
}

// TN returns the sgemmTN buffers of the scratch, for LinearGrad32.
func (sc *Scratch) TN() *TNBuffers { return &sc.tn }
