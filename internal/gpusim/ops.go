package gpusim

import (
	"math"

	"github.com/rewiregnn/rewiregnn/cuda"
)

// The launchers of cuda.Kernels, with the kernels' semantics (cuda/kernels/*.cu). Each checks
// its buffers, then computes on them in place; outputs are fully overwritten.

func (d *Device) Gather(out, x, idx, w cuda.DevPtr, n, rows, dd int) error {
	a := d.args("gather")
	a.sizes(n, rows, dd)
	o, xs, ix, ws := a.f("out", out, n*dd), a.f("x", x, rows*dd), a.idx("idx", idx, n), a.opt("w", w, n)
	if err := a.done(); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		j := valid(ix[i], rows)
		for c := 0; c < dd; c++ {
			v := float32(0)
			if j >= 0 {
				v = xs[j*dd+c]
				if ws != nil {
					v *= ws[i]
				}
			}
			o[i*dd+c] = v
		}
	}
	return nil
}

func (d *Device) ScatterAdd(out, x, idx, w cuda.DevPtr, n, rows, dd int) error {
	a := d.args("scatter-add")
	a.sizes(n, rows, dd)
	o, xs, ix, ws := a.f("out", out, rows*dd), a.f("x", x, n*dd), a.idx("idx", idx, n), a.opt("w", w, n)
	if err := a.done(); err != nil {
		return err
	}
	acc := make([]float64, rows*dd)
	for i := 0; i < n; i++ {
		j := valid(ix[i], rows)
		if j < 0 {
			continue
		}
		for c := 0; c < dd; c++ {
			v := xs[i*dd+c]
			if ws != nil {
				v *= ws[i]
			}
			acc[j*dd+c] += float64(v)
		}
	}
	for i, v := range acc {
		o[i] = float32(v)
	}
	return nil
}

func (d *Device) EdgeSum(out, e, hs, ht, src, dst cuda.DevPtr, m, rows, dd int) error {
	a := d.args("edge sum")
	a.sizes(m, rows, dd)
	o, es, hss, hts := a.f("out", out, m*dd), a.f("e", e, m*dd), a.f("hs", hs, rows*dd), a.f("ht", ht, rows*dd)
	ss, ts := a.idx("src", src, m), a.idx("dst", dst, m)
	if err := a.done(); err != nil {
		return err
	}
	for k := 0; k < m; k++ {
		s, t := valid(ss[k], rows), valid(ts[k], rows)
		for c := 0; c < dd; c++ {
			v := es[k*dd+c]
			if s >= 0 {
				v += hss[s*dd+c]
			}
			if t >= 0 {
				v += hts[t*dd+c]
			}
			o[k*dd+c] = v
		}
	}
	return nil
}

func (d *Device) SegmentSoftmax(y, s, seg cuda.DevPtr, m, h, nodes int) error {
	a := d.args("segment softmax")
	a.sizes(m, h, nodes)
	ys, ss, sg := a.f("y", y, m*h), a.f("s", s, m*h), a.idx("seg", seg, m)
	if err := a.done(); err != nil {
		return err
	}
	mx := make([]float64, nodes*h)
	for i := range mx {
		mx[i] = math.Inf(-1)
	}
	for e := 0; e < m; e++ {
		if t := valid(sg[e], nodes); t >= 0 {
			for k := 0; k < h; k++ {
				mx[t*h+k] = math.Max(mx[t*h+k], float64(ss[e*h+k]))
			}
		}
	}
	sum := make([]float64, nodes*h)
	ex := make([]float64, m*h)
	for e := 0; e < m; e++ {
		if t := valid(sg[e], nodes); t >= 0 {
			for k := 0; k < h; k++ {
				ex[e*h+k] = math.Exp(float64(ss[e*h+k]) - mx[t*h+k])
				sum[t*h+k] += ex[e*h+k]
			}
		}
	}
	for e := 0; e < m; e++ {
		t := valid(sg[e], nodes)
		for k := 0; k < h; k++ {
			if t < 0 {
				ys[e*h+k] = 0
			} else {
				ys[e*h+k] = float32(ex[e*h+k] / sum[t*h+k])
			}
		}
	}
	return nil
}

func (d *Device) SegmentSoftmaxBackward(dx, y, dy, seg cuda.DevPtr, m, h, nodes int) error {
	a := d.args("segment softmax backward")
	a.sizes(m, h, nodes)
	dxs, ys, dys, sg := a.f("dx", dx, m*h), a.f("y", y, m*h), a.f("dy", dy, m*h), a.idx("seg", seg, m)
	if err := a.done(); err != nil {
		return err
	}
	dot := make([]float64, nodes*h)
	for e := 0; e < m; e++ {
		if t := valid(sg[e], nodes); t >= 0 {
			for k := 0; k < h; k++ {
				dot[t*h+k] += float64(ys[e*h+k]) * float64(dys[e*h+k])
			}
		}
	}
	for e := 0; e < m; e++ {
		t := valid(sg[e], nodes)
		for k := 0; k < h; k++ {
			if t < 0 {
				dxs[e*h+k] = 0
			} else {
				dxs[e*h+k] = float32(float64(ys[e*h+k]) * (float64(dys[e*h+k]) - dot[t*h+k]))
			}
		}
	}
	return nil
}

func (d *Device) BatchNorm(b cuda.BatchNormBufs, rows, dd int, training bool) error {
	a := d.args("batch norm")
	a.sizes(rows, dd)
	x, gamma, beta, keep := a.f("X", b.X, rows*dd), a.f("Gamma", b.Gamma, dd), a.f("Beta", b.Beta, dd), a.idx("Keep", b.Keep, rows)
	rm, rv := a.f("RunMean", b.RunMean, dd), a.f("RunVar", b.RunVar, dd)
	out, xhat, mean, inv := a.f("Out", b.Out, rows*dd), a.f("Xhat", b.Xhat, rows*dd), a.f("Mean", b.Mean, dd), a.f("InvStd", b.InvStd, dd)
	if err := a.done(); err != nil {
		return err
	}
	for c := 0; c < dd; c++ {
		if !training {
			mean[c] = rm[c]
			inv[c] = float32(1 / math.Sqrt(float64(rv[c])+cuda.BNEps))
			continue
		}
		s, cnt := 0.0, 0.0
		for r := 0; r < rows; r++ {
			if keep[r] != 0 {
				s += float64(x[r*dd+c])
				cnt++
			}
		}
		mu := 0.0
		if cnt > 0 {
			mu = s / cnt
		}
		q := 0.0
		for r := 0; r < rows; r++ {
			if keep[r] != 0 {
				dv := float64(x[r*dd+c]) - mu
				q += dv * dv
			}
		}
		vr, unb := 0.0, 0.0
		if cnt > 0 {
			vr = q / cnt
		}
		unb = vr
		if cnt > 1 {
			unb = q / (cnt - 1)
		}
		mean[c] = float32(mu)
		inv[c] = float32(1 / math.Sqrt(vr+cuda.BNEps))
		rm[c] = float32((1-cuda.BNMomentum)*float64(rm[c]) + cuda.BNMomentum*mu)
		rv[c] = float32((1-cuda.BNMomentum)*float64(rv[c]) + cuda.BNMomentum*unb)
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < dd; c++ {
			e := r*dd + c
			if keep[r] == 0 {
				xhat[e], out[e] = 0, 0
				continue
			}
			xh := float32((float64(x[e]) - float64(mean[c])) * float64(inv[c]))
			xhat[e] = xh
			out[e] = gamma[c]*xh + beta[c]
		}
	}
	return nil
}

func (d *Device) BatchNormBackward(dx, dgamma, dbeta, dy cuda.DevPtr, b cuda.BatchNormBufs, rows, dd int, training bool) error {
	a := d.args("batch norm backward")
	a.sizes(rows, dd)
	dxs, dg, db, dys := a.f("dx", dx, rows*dd), a.f("dgamma", dgamma, dd), a.f("dbeta", dbeta, dd), a.f("dy", dy, rows*dd)
	xhat, inv, gamma, keep := a.f("Xhat", b.Xhat, rows*dd), a.f("InvStd", b.InvStd, dd), a.f("Gamma", b.Gamma, dd), a.idx("Keep", b.Keep, rows)
	if err := a.done(); err != nil {
		return err
	}
	for c := 0; c < dd; c++ {
		s1, s2, cnt := 0.0, 0.0, 0.0
		for r := 0; r < rows; r++ {
			if keep[r] != 0 {
				e := r*dd + c
				s1 += float64(dys[e])
				s2 += float64(dys[e]) * float64(xhat[e])
				cnt++
			}
		}
		dg[c], db[c] = float32(s2), float32(s1)
		scale := float64(gamma[c]) * float64(inv[c])
		n := max(cnt, 1)
		for r := 0; r < rows; r++ {
			e := r*dd + c
			switch {
			case keep[r] == 0:
				dxs[e] = 0
			case training:
				dxs[e] = float32(scale * (float64(dys[e]) - s1/n - float64(xhat[e])*s2/n))
			default:
				dxs[e] = float32(scale * float64(dys[e]))
			}
		}
	}
	return nil
}

func (d *Device) BatchNormReluMask(dy, g, xhat, gamma, beta cuda.DevPtr, rows, dd int) error {
	a := d.args("batch norm ReLU mask")
	a.sizes(rows, dd)
	dys, gs, xh, gm, bt := a.f("dy", dy, rows*dd), a.f("g", g, rows*dd), a.f("xhat", xhat, rows*dd), a.f("gamma", gamma, dd), a.f("beta", beta, dd)
	if err := a.done(); err != nil {
		return err
	}
	for e := range dys {
		c := e % dd
		if gm[c]*xh[e]+bt[c] > 0 {
			dys[e] = gs[e]
		} else {
			dys[e] = 0
		}
	}
	return nil
}

func (d *Device) LayerNorm(b cuda.LayerNormBufs, rows, dd int) error {
	a := d.args("layer norm")
	a.sizes(rows, dd)
	x, gamma, beta, keep := a.f("X", b.X, rows*dd), a.f("Gamma", b.Gamma, dd), a.f("Beta", b.Beta, dd), a.idx("Keep", b.Keep, rows)
	out, xhat, inv := a.f("Out", b.Out, rows*dd), a.f("Xhat", b.Xhat, rows*dd), a.f("InvStd", b.InvStd, rows)
	if err := a.done(); err != nil {
		return err
	}
	for r := 0; r < rows; r++ {
		xr, xh, o := x[r*dd:(r+1)*dd], xhat[r*dd:(r+1)*dd], out[r*dd:(r+1)*dd]
		if keep[r] == 0 {
			clear(xh)
			clear(o)
			inv[r] = 0
			continue
		}
		mu := 0.0
		for _, v := range xr {
			mu += float64(v)
		}
		mu /= float64(dd)
		q := 0.0
		for _, v := range xr {
			q += (float64(v) - mu) * (float64(v) - mu)
		}
		iv := 1 / math.Sqrt(q/float64(dd)+cuda.BNEps)
		for c, v := range xr {
			xh[c] = float32((float64(v) - mu) * iv)
			o[c] = gamma[c]*xh[c] + beta[c]
		}
		inv[r] = float32(iv)
	}
	return nil
}

func (d *Device) LayerNormBackward(dx, dgamma, dbeta, dy cuda.DevPtr, b cuda.LayerNormBufs, rows, dd int) error {
	a := d.args("layer norm backward")
	a.sizes(rows, dd)
	dxs, dg, db, dys := a.f("dx", dx, rows*dd), a.f("dgamma", dgamma, dd), a.f("dbeta", dbeta, dd), a.f("dy", dy, rows*dd)
	xhat, inv, gamma, keep := a.f("Xhat", b.Xhat, rows*dd), a.f("InvStd", b.InvStd, rows), a.f("Gamma", b.Gamma, dd), a.idx("Keep", b.Keep, rows)
	if err := a.done(); err != nil {
		return err
	}
	s1, s2 := make([]float64, dd), make([]float64, dd)
	for r := 0; r < rows; r++ {
		g, xh, o := dys[r*dd:(r+1)*dd], xhat[r*dd:(r+1)*dd], dxs[r*dd:(r+1)*dd]
		if keep[r] == 0 {
			clear(o)
			continue
		}
		m1, m2 := 0.0, 0.0
		for c := range o {
			gg := float64(gamma[c]) * float64(g[c])
			m1 += gg
			m2 += gg * float64(xh[c])
			s1[c] += float64(g[c])
			s2[c] += float64(g[c]) * float64(xh[c])
		}
		m1 /= float64(dd)
		m2 /= float64(dd)
		for c := range o {
			o[c] = float32(float64(inv[r]) * (float64(gamma[c])*float64(g[c]) - m1 - float64(xh[c])*m2))
		}
	}
	for c := 0; c < dd; c++ {
		dg[c], db[c] = float32(s2[c]), float32(s1[c])
	}
	return nil
}

func sigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

func (d *Device) GatedAggregate(b cuda.GatedBufs, m, nbh, nodes, dd int) error {
	a := d.args("gated aggregate")
	a.sizes(m, nbh, nodes, dd)
	e, bh, src, dst := a.f("Ehat", b.Ehat, m*dd), a.f("Bh", b.Bh, nbh*dd), a.idx("Src", b.Src, m), a.idx("Dst", b.Dst, m)
	out, eta, den := a.f("Out", b.Out, nodes*dd), a.f("Eta", b.Eta, m*dd), a.f("Den", b.Den, nodes*dd)
	if err := a.done(); err != nil {
		return err
	}
	num, dn := make([]float64, nodes*dd), make([]float64, nodes*dd)
	for i := range dn {
		dn[i] = float64(float32(cuda.GatedEps))
	}
	for k := 0; k < m; k++ {
		s, t := valid(src[k], nbh), valid(dst[k], nodes)
		for c := 0; c < dd; c++ {
			if s < 0 || t < 0 {
				eta[k*dd+c] = 0
				continue
			}
			g := sigmoid(e[k*dd+c])
			eta[k*dd+c] = g
			num[t*dd+c] += float64(g * bh[s*dd+c])
			dn[t*dd+c] += float64(g)
		}
	}
	for i := range out {
		den[i] = float32(dn[i])
		out[i] = float32(num[i]) / den[i]
	}
	return nil
}

func (d *Device) GatedAggregateBackward(de, dbh, g cuda.DevPtr, b cuda.GatedBufs, m, nbh, nodes, dd int) error {
	a := d.args("gated aggregate backward")
	a.sizes(m, nbh, nodes, dd)
	des, dbhs, gs := a.f("de", de, m*dd), a.f("dbh", dbh, nbh*dd), a.f("g", g, nodes*dd)
	bh, out, den, eta := a.f("Bh", b.Bh, nbh*dd), a.f("Out", b.Out, nodes*dd), a.f("Den", b.Den, nodes*dd), a.f("Eta", b.Eta, m*dd)
	src, dst := a.idx("Src", b.Src, m), a.idx("Dst", b.Dst, m)
	if err := a.done(); err != nil {
		return err
	}
	acc := make([]float64, nbh*dd)
	for k := 0; k < m; k++ {
		s, t := valid(src[k], nbh), valid(dst[k], nodes)
		for c := 0; c < dd; c++ {
			e := k*dd + c
			if s < 0 || t < 0 {
				des[e] = 0
				continue
			}
			gt, dn, et := float64(gs[t*dd+c]), float64(den[t*dd+c]), float64(eta[e])
			des[e] = float32(gt * (float64(bh[s*dd+c]) - float64(out[t*dd+c])) / dn * et * (1 - et))
			acc[s*dd+c] += gt * et / dn
		}
	}
	for i, v := range acc {
		dbhs[i] = float32(v)
	}
	return nil
}

func (d *Device) GaussianWeights(w, u, mu, is cuda.DevPtr, m, kk, p int) error {
	a := d.args("gaussian weights")
	a.sizes(m, kk, p)
	ws, us, mus, iss := a.f("w", w, m*kk), a.f("u", u, m*p), a.f("mu", mu, kk*p), a.f("is", is, kk*p)
	if err := a.done(); err != nil {
		return err
	}
	for i := 0; i < m; i++ {
		for j := 0; j < kk; j++ {
			acc := 0.0
			for c := 0; c < p; c++ {
				dv := float64(us[i*p+c] - mus[j*p+c])
				sv := float64(iss[j*p+c])
				acc += dv * dv * sv * sv
			}
			ws[i*kk+j] = float32(math.Exp(-0.5 * acc))
		}
	}
	return nil
}

func (d *Device) GaussianWeightsBackward(du, dmu, dis, u, mu, is, w, g cuda.DevPtr, m, kk, p int) error {
	a := d.args("gaussian weights backward")
	a.sizes(m, kk, p)
	dus, dmus, diss := a.f("du", du, m*p), a.f("dmu", dmu, kk*p), a.f("dis", dis, kk*p)
	us, mus, iss, ws, gs := a.f("u", u, m*p), a.f("mu", mu, kk*p), a.f("is", is, kk*p), a.f("w", w, m*kk), a.f("g", g, m*kk)
	if err := a.done(); err != nil {
		return err
	}
	au, amu, ais := make([]float64, m*p), make([]float64, kk*p), make([]float64, kk*p)
	for i := 0; i < m; i++ {
		for j := 0; j < kk; j++ {
			gw := float64(gs[i*kk+j]) * float64(ws[i*kk+j])
			for c := 0; c < p; c++ {
				dv := float64(us[i*p+c]) - float64(mus[j*p+c])
				sv := float64(iss[j*p+c])
				au[i*p+c] -= gw * dv * sv * sv
				amu[j*p+c] += gw * dv * sv * sv
				ais[j*p+c] -= gw * dv * dv * sv
			}
		}
	}
	for i, v := range au {
		dus[i] = float32(v)
	}
	for i := range amu {
		dmus[i], diss[i] = float32(amu[i]), float32(ais[i])
	}
	return nil
}

func (d *Device) KernelMix(out, x, w cuda.DevPtr, m, kk, dd int) error {
	a := d.args("kernel mix")
	a.sizes(m, kk, dd)
	o, xs, ws := a.f("out", out, m*dd), a.f("x", x, m*kk*dd), a.f("w", w, m*kk)
	if err := a.done(); err != nil {
		return err
	}
	for i := 0; i < m; i++ {
		for t := 0; t < dd; t++ {
			acc := 0.0
			for j := 0; j < kk; j++ {
				acc += float64(ws[i*kk+j]) * float64(xs[i*kk*dd+j*dd+t])
			}
			o[i*dd+t] = float32(acc)
		}
	}
	return nil
}

func (d *Device) KernelMixBackward(dx, dw, x, w, g cuda.DevPtr, m, kk, dd int) error {
	a := d.args("kernel mix backward")
	a.sizes(m, kk, dd)
	dxs, dws, xs, ws, gs := a.f("dx", dx, m*kk*dd), a.f("dw", dw, m*kk), a.f("x", x, m*kk*dd), a.f("w", w, m*kk), a.f("g", g, m*dd)
	if err := a.done(); err != nil {
		return err
	}
	for i := 0; i < m; i++ {
		for j := 0; j < kk; j++ {
			acc := 0.0
			for t := 0; t < dd; t++ {
				dxs[i*kk*dd+j*dd+t] = ws[i*kk+j] * gs[i*dd+t]
				acc += float64(xs[i*kk*dd+j*dd+t]) * float64(gs[i*dd+t])
			}
			dws[i*kk+j] = float32(acc)
		}
	}
	return nil
}

func (d *Device) HeadDot(out, qa, kb cuda.DevPtr, m, h, dd int) error {
	a := d.args("head dot")
	a.sizes(m, h, dd)
	if h <= 0 || dd%h != 0 {
		a.err = append(a.err, "heads do not divide d")
	}
	o, q, k := a.f("out", out, m*h), a.f("a", qa, m*dd), a.f("b", kb, m*dd)
	if err := a.done(); err != nil {
		return err
	}
	wd := dd / h
	for i := 0; i < m; i++ {
		for j := 0; j < h; j++ {
			acc := 0.0
			for t := 0; t < wd; t++ {
				acc += float64(q[i*dd+j*wd+t]) * float64(k[i*dd+j*wd+t])
			}
			o[i*h+j] = float32(acc)
		}
	}
	return nil
}

func (d *Device) HeadScale(out, x, s cuda.DevPtr, m, h, dd int) error {
	a := d.args("head scale")
	a.sizes(m, h, dd)
	if h <= 0 || dd%h != 0 {
		a.err = append(a.err, "heads do not divide d")
	}
	o, xs, ss := a.f("out", out, m*dd), a.f("x", x, m*dd), a.f("s", s, m*h)
	if err := a.done(); err != nil {
		return err
	}
	wd := dd / h
	for i := 0; i < m; i++ {
		for c := 0; c < dd; c++ {
			o[i*dd+c] = ss[i*h+c/wd] * xs[i*dd+c]
		}
	}
	return nil
}

// gemm: c [m, n] = op(a)·op(b), row-major, accumulated in float64.
func gemm(ta, tb bool, m, n, k int, av, bv, cv []float32) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			acc := 0.0
			for t := 0; t < k; t++ {
				x := av[i*k+t]
				if ta {
					x = av[t*m+i]
				}
				y := bv[t*n+j]
				if tb {
					y = bv[j*k+t]
				}
				acc += float64(x) * float64(y)
			}
			cv[i*n+j] = float32(acc)
		}
	}
}

func (d *Device) MatMul(out, x, w cuda.DevPtr, m, ka, nb int) error {
	a := d.args("matmul")
	a.sizes(m, ka, nb)
	o, xs, ws := a.f("out", out, m*nb), a.f("x", x, m*ka), a.f("w", w, ka*nb)
	if err := a.done(); err != nil {
		return err
	}
	gemm(false, false, m, nb, ka, xs, ws, o)
	return nil
}

func (d *Device) MatMulBackward(dx, dw, x, w, g cuda.DevPtr, m, ka, nb int) error {
	a := d.args("matmul backward")
	a.sizes(m, ka, nb)
	gs := a.f("g", g, m*nb)
	var dxs, dws, xs, ws []float32
	if dx != 0 {
		dxs, ws = a.f("dx", dx, m*ka), a.f("w", w, ka*nb)
	}
	if dw != 0 {
		dws, xs = a.f("dw", dw, ka*nb), a.f("x", x, m*ka)
	}
	if err := a.done(); err != nil {
		return err
	}
	if dx != 0 {
		gemm(false, true, m, ka, nb, gs, ws, dxs)
	}
	if dw != 0 {
		gemm(true, false, ka, nb, m, xs, gs, dws)
	}
	return nil
}

func (d *Device) AddBias(out, x, b cuda.DevPtr, rows, dd int) error {
	a := d.args("add bias")
	a.sizes(rows, dd)
	o, xs, bs := a.f("out", out, rows*dd), a.f("x", x, rows*dd), a.f("b", b, dd)
	if err := a.done(); err != nil {
		return err
	}
	for e := range o {
		o[e] = xs[e] + bs[e%dd]
	}
	return nil
}

func (d *Device) ColSum(out, x cuda.DevPtr, rows, dd int) error {
	a := d.args("column sum")
	a.sizes(rows, dd)
	o, xs := a.f("out", out, dd), a.f("x", x, rows*dd)
	if err := a.done(); err != nil {
		return err
	}
	for c := 0; c < dd; c++ {
		s := 0.0
		for r := 0; r < rows; r++ {
			s += float64(xs[r*dd+c])
		}
		o[c] = float32(s)
	}
	return nil
}

func (d *Device) binary(op string, out, x, y cuda.DevPtr, n int, f func(a, b float32) float32) error {
	a := d.args(op)
	a.sizes(n)
	o, xs, ys := a.f("out", out, n), a.f("a", x, n), a.f("b", y, n)
	if err := a.done(); err != nil {
		return err
	}
	for i := range o {
		o[i] = f(xs[i], ys[i])
	}
	return nil
}

func (d *Device) unary(op string, out, x cuda.DevPtr, n int, f func(float32) float32) error {
	a := d.args(op)
	a.sizes(n)
	o, xs := a.f("out", out, n), a.f("x", x, n)
	if err := a.done(); err != nil {
		return err
	}
	for i := range o {
		o[i] = f(xs[i])
	}
	return nil
}

func (d *Device) Add(out, x, y cuda.DevPtr, n int) error {
	return d.binary("add", out, x, y, n, func(a, b float32) float32 { return a + b })
}
func (d *Device) Sub(out, x, y cuda.DevPtr, n int) error {
	return d.binary("sub", out, x, y, n, func(a, b float32) float32 { return a - b })
}
func (d *Device) Mul(out, x, y cuda.DevPtr, n int) error {
	return d.binary("mul", out, x, y, n, func(a, b float32) float32 { return a * b })
}
func (d *Device) Div(out, x, y cuda.DevPtr, n int) error {
	return d.binary("div", out, x, y, n, func(a, b float32) float32 { return a / b })
}

func (d *Device) ScalarOp(out, x, s cuda.DevPtr, n, op int, scalarLeft bool) error {
	a := d.args("scalar op")
	a.sizes(n)
	o, xs, ss := a.f("out", out, n), a.f("x", x, n), a.f("s", s, 1)
	if op < cuda.ScalarAdd || op > cuda.ScalarDiv {
		a.err = append(a.err, "operator")
	}
	if err := a.done(); err != nil {
		return err
	}
	for i := range o {
		l, r := xs[i], ss[0]
		if scalarLeft {
			l, r = r, l
		}
		switch op {
		case cuda.ScalarAdd:
			o[i] = l + r
		case cuda.ScalarSub:
			o[i] = l - r
		case cuda.ScalarMul:
			o[i] = l * r
		default:
			o[i] = l / r
		}
	}
	return nil
}

func (d *Device) Relu(out, x cuda.DevPtr, n int) error {
	return d.unary("relu", out, x, n, func(v float32) float32 { return max(v, 0) })
}
func (d *Device) ReluBackward(dx, y, g cuda.DevPtr, n int) error {
	return d.binary("relu backward", dx, y, g, n, func(y, g float32) float32 {
		if y > 0 {
			return g
		}
		return 0
	})
}
func (d *Device) Sigmoid(out, x cuda.DevPtr, n int) error {
	return d.unary("sigmoid", out, x, n, sigmoid)
}
func (d *Device) Tanh(out, x cuda.DevPtr, n int) error {
	return d.unary("tanh", out, x, n, func(v float32) float32 { return float32(math.Tanh(float64(v))) })
}
func (d *Device) Exp(out, x cuda.DevPtr, n int) error {
	return d.unary("exp", out, x, n, func(v float32) float32 { return float32(math.Exp(float64(v))) })
}
func (d *Device) Abs(out, x cuda.DevPtr, n int) error {
	return d.unary("abs", out, x, n, func(v float32) float32 { return float32(math.Abs(float64(v))) })
}

func (d *Device) Dropout(out, x cuda.DevPtr, n int, rate float64, seed uint64) error {
	a := d.args("dropout")
	a.sizes(n)
	if rate < 0 || rate >= 1 {
		a.err = append(a.err, "rate outside [0, 1)")
	}
	o, xs := a.f("out", out, n), a.f("x", x, n)
	if err := a.done(); err != nil {
		return err
	}
	scale := float32(1 / (1 - rate))
	for i := range o {
		if cuda.DropoutKeep(seed, int64(i), rate) {
			o[i] = xs[i] * scale
		} else {
			o[i] = 0
		}
	}
	return nil
}

func (d *Device) MaskedL1(out, p, y, w cuda.DevPtr, n int) error {
	a := d.args("masked L1")
	a.sizes(n)
	o, ps, ys, ws := a.f("out", out, 1), a.f("p", p, n), a.f("y", y, n), a.f("w", w, n)
	if err := a.done(); err != nil {
		return err
	}
	s := 0.0
	for i := 0; i < n; i++ {
		s += float64(ws[i]) * math.Abs(float64(ps[i])-float64(ys[i]))
	}
	o[0] = float32(s)
	return nil
}

func (d *Device) MaskedL1Backward(dp, p, y, w, g cuda.DevPtr, n int) error {
	a := d.args("masked L1 backward")
	a.sizes(n)
	dps, ps, ys, ws, gs := a.f("dp", dp, n), a.f("p", p, n), a.f("y", y, n), a.f("w", w, n), a.f("g", g, 1)
	if err := a.done(); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		s := float32(0)
		if ps[i] > ys[i] {
			s = 1
		} else if ps[i] < ys[i] {
			s = -1
		}
		dps[i] = gs[0] * ws[i] * s
	}
	return nil
}

// ceRow returns log Σ exp(z) of one row.
func ceRow(z []float32) float64 {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = math.Max(mx, float64(v))
	}
	s := 0.0
	for _, v := range z {
		s += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(s)
}

func (d *Device) WeightedCE(out, z, labels, w cuda.DevPtr, r, cl int) error {
	a := d.args("weighted cross-entropy")
	a.sizes(r, cl)
	if cl <= 0 {
		a.err = append(a.err, "no classes")
	}
	o, zs, ls, ws := a.f("out", out, 1), a.f("z", z, r*cl), a.idx("labels", labels, r), a.f("w", w, r)
	if err := a.done(); err != nil {
		return err
	}
	loss, total := 0.0, 0.0
	for i := 0; i < r; i++ {
		y := valid(ls[i], cl)
		if y < 0 {
			continue
		}
		total += float64(ws[i])
		if ws[i] != 0 {
			row := zs[i*cl : (i+1)*cl]
			loss += float64(float32(float64(ws[i]) * (ceRow(row) - float64(row[y]))))
		}
	}
	o[0] = 0
	if total != 0 {
		o[0] = float32(loss / total)
	}
	return nil
}

func (d *Device) WeightedCEBackward(dz, z, labels, w, g cuda.DevPtr, r, cl int) error {
	a := d.args("weighted cross-entropy backward")
	a.sizes(r, cl)
	if cl <= 0 {
		a.err = append(a.err, "no classes")
	}
	dzs, zs, ls, ws, gs := a.f("dz", dz, r*cl), a.f("z", z, r*cl), a.idx("labels", labels, r), a.f("w", w, r), a.f("g", g, 1)
	if err := a.done(); err != nil {
		return err
	}
	total := 0.0
	for i := 0; i < r; i++ {
		if valid(ls[i], cl) >= 0 {
			total += float64(ws[i])
		}
	}
	t32 := float32(total)
	for i := 0; i < r; i++ {
		y := valid(ls[i], cl)
		row, di := zs[i*cl:(i+1)*cl], dzs[i*cl:(i+1)*cl]
		if y < 0 || ws[i] == 0 || t32 == 0 {
			clear(di)
			continue
		}
		logZ := ceRow(row)
		scale := float64(gs[0]) * float64(ws[i]) / float64(t32)
		for k, v := range row {
			x := scale * math.Exp(float64(v)-logZ)
			if k == y {
				x -= scale
			}
			di[k] = float32(x)
		}
	}
	return nil
}

func (d *Device) AdamStep(ad cuda.Adam, step int, x, m, v, g cuda.DevPtr, n int) error {
	a := d.args("adam")
	a.sizes(n)
	if step < 1 {
		a.err = append(a.err, "step < 1")
	}
	xs, ms, vs, gs := a.f("x", x, n), a.f("m", m, n), a.f("v", v, n), a.f("g", g, n)
	if err := a.done(); err != nil {
		return err
	}
	// As adam.cu, with the launcher's float32 arguments.
	lr, b1, b2, eps := float64(float32(ad.LR)), float64(float32(ad.Beta1)), float64(float32(ad.Beta2)), float64(float32(ad.Eps))
	c1 := float64(float32(1 - math.Pow(ad.Beta1, float64(step))))
	c2 := float64(float32(1 - math.Pow(ad.Beta2, float64(step))))
	for i := 0; i < n; i++ {
		gi := float64(gs[i])
		mi := b1*float64(ms[i]) + (1-b1)*gi
		vi := b2*float64(vs[i]) + (1-b2)*gi*gi
		ms[i], vs[i] = float32(mi), float32(vi)
		xs[i] = float32(float64(xs[i]) - lr*(mi/c1)/(math.Sqrt(vi/c2)+eps))
	}
	return nil
}
