package kernels

// Sig declares a kernel: the file that defines it, its name, and its parameters, one letter
// each: 'p' a device pointer, 'i' an int, 'f' a float, 'u' an unsigned 64-bit integer. Launches
// are checked against it at run time, and the compile gate checks it against the parameter
// list NVRTC writes into the PTX, so the Go side and the CUDA side cannot drift apart
// unnoticed.
type Sig struct {
	File, Name, Params string
}

// Sigs declares every kernel of the *.cu files, each launched by one of package cuda's
// launchers; those of the element-wise ops' generated launchers come from the op table
// (prog/op.go, zz_sigs.go).
var Sigs = append([]Sig{
	{"gather.cu", "gather_rows", "ppppiii"},
	{"gather.cu", "scatter_add_rows", "ppppiii"},
	{"gather.cu", "edge_sum", "pppppppppiiiippppii"},
	{"softmax.cu", "seg_softmax_max", "pppiii"},
	{"softmax.cu", "seg_softmax_exp", "pppppiii"},
	{"softmax.cu", "seg_softmax_div", "pppiii"},
	{"softmax.cu", "seg_softmax_bwd_dot", "ppppiii"},
	{"softmax.cu", "seg_softmax_bwd", "pppppiii"},
	{"segmax.cu", "seg_max_keys", "pppiii"},
	{"segmax.cu", "seg_max_arg", "ppppiii"},
	{"segmax.cu", "seg_max_out", "ppppii"},
	{"segmax.cu", "seg_max_bwd", "ppppiii"},
	{"batchnorm.cu", "bn_train_stats", "ppppppppiiiffi"},
	{"batchnorm.cu", "bn_eval_stats", "ppppif"},
	{"batchnorm.cu", "bn_apply", "ppppppppiiii"},
	{"batchnorm.cu", "bn_backward", "pppppppppppppiiiiii"},
	{"batchnorm.cu", "bn_backward_dx", "pppppppppiiii"},
	{"layernorm.cu", "ln_forward", "pppppppiif"},
	{"layernorm.cu", "ln_backward_x", "ppppppii"},
	{"layernorm.cu", "ln_backward_params", "pppppppiii"},
	{"gated.cu", "gated_edges", "pppppppiiiii"},
	{"gated.cu", "gated_div", "ppii"},
	{"gated.cu", "gated_backward", "ppppppppppppppppppppiiiiiiiiii"},
	{"gaussian.cu", "gauss_weights", "ppppiii"},
	{"gaussian.cu", "gauss_grad_u", "ppppppiii"},
	{"gaussian.cu", "gauss_grad_params", "pppppppiii"},
	{"kernelmix.cu", "kernel_mix", "pppiii"},
	{"kernelmix.cu", "kernel_mix_grad_x", "pppiii"},
	{"kernelmix.cu", "kernel_mix_grad_w", "pppiii"},
	{"heads.cu", "head_dot", "pppiii"},
	{"heads.cu", "head_scale", "pppiii"},
	{"elementwise.cu", "ew_add", "pppi"},
	{"elementwise.cu", "add_biased", "ppppppii"},
	{"elementwise.cu", "fill2", "pfpfi"},
	{"gather.cu", "scatter_add_pair", "pppppiii"},
	{"elementwise.cu", "ew_mul", "pppi"},
	{"elementwise.cu", "ew_sub", "pppi"},
	{"elementwise.cu", "ew_div", "pppi"},
	{"elementwise.cu", "ew_scalar", "pppiii"},
	{"elementwise.cu", "ew_sigmoid_grad", "pppi"},
	{"elementwise.cu", "ew_tanh_grad", "pppi"},
	{"elementwise.cu", "ew_abs_grad", "pppi"},
	{"elementwise.cu", "add_bias", "pppii"},
	{"elementwise.cu", "broadcast_rows", "ppii"},
	{"elementwise.cu", "col_sum", "ppppiii"},
	{"elementwise.cu", "col_sum_batch", "ppppiii"},
	{"elementwise.cu", "fill_batch", "p"},
	{"elementwise.cu", "relu_biased", "pppii"},
	{"gemm.cu", "matmul_gradw", "ppppiiii"},
	{"gemm.cu", "matmul_gradw_batch", "ppppiiii"},
	{"gemm.cu", "matmul_gradw_merge", "pppiii"},
	{"fused.cu", "edge_sum_stats", "pppppppppiiiippppiipppppppiff"},
	{"fused.cu", "add_biased_stats", "ppppppiipppppppiff"},
	{"dropout.cu", "dropout", "ppifupu"},
	{"loss.cu", "masked_l1", "ppppi"},
	{"loss.cu", "masked_l1_grad", "pppppi"},
	{"loss.cu", "masked_l1_both", "ppppppi"},
	{"loss.cu", "masked_bce", "ppppi"},
	{"loss.cu", "masked_bce_grad", "pppppi"},
	{"loss.cu", "masked_bce_both", "ppppppi"},
	{"loss.cu", "ce_rows", "pppppii"},
	{"loss.cu", "ce_reduce", "ppppi"},
	{"loss.cu", "ce_total", "pppii"},
	{"loss.cu", "ce_grad", "ppppppii"},
	{"adam.cu", "adam_step", "ppppipfff"},
}, elementwiseSigs...)
