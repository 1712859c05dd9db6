"""The TinyLM training program as a tree of host events (modules, operators, launches) with
the device tasks they launch: what every run executes, before any timing."""
from __future__ import annotations

from .common import B, C, CAST_US, D, F32, GRAD_TOTAL, KINDS, N, NCCL_US, NH, NPU_ONLY, T, TRANSDATA_US, V


class Node:
    """One host event (cpu_op / user_annotation / cuda_runtime / python_function module) of the program."""

    def __init__(self, name, cat="cpu_op", kids=(), kern=None, api=None, key=None, bwd=False, dims=None,
                 types=None, out=None, allocs=(), pre=4.0, post=2.5, mod=None, launch=None, kin=None):
        self.name, self.cat, self.kern, self.api, self.key, self.bwd = name, cat, kern, api, key, bwd
        self.kids = [k for k in kids if k is not None]
        self.dims, self.types, self.out, self.allocs = dims, types, out, list(allocs)
        self.pre, self.post, self.mod, self.launch, self.kin = pre, post, mod, launch, kin
        self.start = self.end = 0
        self.tid = 0
        self.stack: list[str] = []
        self.launches: list[Node] = []     # cudaLaunchKernel children / the NPU api child
        self.enq = None                    # NPU Enqueue (start, dur, corr)
        self.frames: list[tuple] = []      # python frames of a module node
        self.seq = -1


class Program:
    """Builds one step's op trees for a device, then places them in time."""

    def __init__(self, var: dict, step: int):
        self.var, self.dev, self.step = var, var["dev"], step

    # ---- builders
    def mod(self, cls, idx, kids):
        return Node(f"nn.Module: {cls}_{idx}", "python_function", kids, mod=(cls, idx), pre=2.6, post=2.1)

    def leaf(self, name, kern, dims, api=None, key=None, types=None, out=None, allocs=(), **kw):
        kern = [k for k in kern if k[0] not in NPU_ONLY or self.dev == "NPU"]
        api = api or KINDS[kern[0][0]][1]
        return Node(name, kern=kern, api=api, key=key, dims=dims, types=types or ["float"] * len(dims),
                    out=out, allocs=allocs, **kw)

    def linear(self, key, fin, fout, dur, bias=True):
        k = "addmm" if bias else "mm_head"
        x3 = [B, T, fin]
        if bias:
            inner = self.leaf("aten::addmm", [(k, dur)], [[fout], [N, fin], [fin, fout], [], []], key=key,
                              types=["float", "float", "float", "Scalar", "Scalar"], out=[[N, fout]],
                              allocs=[(N * fout * F32, "save")], kin=[[N, fin], [fout, fin], [fout]])
            return Node("aten::linear", kids=[Node("aten::t", dims=[[fout, fin]], types=["float"]), inner],
                        dims=[x3, [fout, fin], [fout]], types=["float"] * 3)
        inner = self.leaf("aten::mm", [(k, dur)], [[N, fin], [fin, fout]], key=key, out=[[N, fout]],
                          allocs=[(N * fout * F32, "save")])
        mm = Node("aten::matmul", kids=[Node("aten::view", dims=[x3, []], types=["float", "ScalarList"]), inner],
                  dims=[x3, [fin, fout]], types=["float", "float"])
        return Node("aten::linear", kids=[Node("aten::t", dims=[[fout, fin]], types=["float"]), mm],
                    dims=[x3, [fout, fin]], types=["float", "float"])

    def layer_norm(self, key):
        ln = self.var.get("ln", 1.0)
        inner = self.leaf("aten::native_layer_norm", [("ln", 30 * ln)], [[B, T, C], [], [C], [C], []], key=key,
                          types=["float", "ScalarList", "float", "float", "Scalar"], out=[[B, T, C], [B, T, 1]],
                          allocs=[(N * C * F32, "save"), (N * F32, "save"), (N * F32, "save")])
        return Node("aten::layer_norm", kids=[inner], dims=[[B, T, C], [], [C], [C], [], []],
                    types=["float", "ScalarList", "float", "float", "Scalar", "Scalar"])

    def cast(self, dims):
        if self.dev != "NPU":
            return None
        return self.leaf("npu::npu_dtype_cast", [("cast", CAST_US)], [dims, []], types=["long int", "Scalar"],
                         out=[dims])

    def format_cast(self):
        if self.dev != "NPU":
            return None
        return self.leaf("aten::npu_format_cast", [("transdata", TRANSDATA_US)], [[B, NH, T, D], []],
                         types=["float", "Scalar"], out=[[B, NH, T // 16, D // 16, 16, 16]])

    def block(self, b):
        k = lambda s: f"b{b}.{s}"  # noqa: E731  (fwd/bwd pairing keys)
        fc1 = 400 * (self.var.get("fc1_b1", 1.0) if b == 1 else 1.0)
        gelu_alloc = [(N * 4 * C * F32, "save")]
        if b == 1 and self.var.get("extra"):
            gelu_alloc.append((self.var["extra"], "save"))
        bh = [B * NH, T, T]
        return self.mod("Block", b, [
            self.mod("LayerNorm", 2 * b, [self.layer_norm(k("ln1"))]),
            self.mod("Attention", b, [
                self.mod("Linear", 4 * b, [self.linear(k("qkv"), C, 3 * C, 300)]),
                self.format_cast(),
                Node("aten::matmul", kids=[self.leaf("aten::bmm", [("bmm", 160)], [[B * NH, T, D], [B * NH, D, T]],
                                                     key=k("qk"), out=[bh], allocs=[(B * NH * T * T * F32, "save")])],
                     dims=[[B, NH, T, D], [B, NH, D, T]], types=["float", "float"]),
                self.leaf("aten::div", [("div", 60)], [[B, NH, T, T], []], key=k("div"), types=["float", "Scalar"],
                          out=[[B, NH, T, T]], allocs=[(B * NH * T * T * F32, "save")]),
                Node("aten::softmax", kids=[self.leaf("aten::_softmax", [("softmax", 120)], [[B, NH, T, T], [], []],
                                                      key=k("sm"), types=["float", "Scalar", "Scalar"],
                                                      allocs=[(B * NH * T * T * F32, "save")])],
                     dims=[[B, NH, T, T], [], []], types=["float", "Scalar", "ScalarType"]),
                Node("aten::matmul", kids=[self.leaf("aten::bmm", [("bmm", 160)], [bh, [B * NH, T, D]],
                                                     key=k("av"), out=[[B * NH, T, D]],
                                                     allocs=[(N * C * F32, "save")])],
                     dims=[[B, NH, T, T], [B, NH, T, D]], types=["float", "float"]),
                self.mod("Linear", 4 * b + 1, [self.linear(k("proj"), C, C, 100)]),
            ]),
            self.leaf("aten::add", [("add", 20)], [[B, T, C], [B, T, C], []], types=["float", "float", "Scalar"]),
            self.mod("LayerNorm", 2 * b + 1, [self.layer_norm(k("ln2"))]),
            self.mod("MLP", b, [
                self.mod("Linear", 4 * b + 2, [self.linear(k("fc1"), C, 4 * C, fc1)]),
                self.mod("GELU", b, [self.leaf("aten::gelu", [("gelu", 80)], [[B, T, 4 * C]], key=k("gelu"),
                                               allocs=gelu_alloc)]),
                self.mod("Linear", 4 * b + 3, [self.linear(k("fc2"), 4 * C, C, 400)]),
            ]),
            self.leaf("aten::add", [("add", 20)], [[B, T, C], [B, T, C], []], types=["float", "float", "Scalar"]),
        ])

    def forward(self):
        lbl = [B, T]
        copy = self.leaf("aten::copy_", [("memcpy", 10)], [lbl, lbl, []], types=["long int", "long int", "Scalar"],
                         launch="cudaMemcpyAsync")
        to = Node("aten::to", kids=[Node("aten::_to_copy", kids=[copy], dims=[lbl, [], [], [], [], []],
                                         types=["long int"] + ["Scalar"] * 5, allocs=[(N * 8, "save", "nll")])],
                  dims=[lbl, [], [], [], [], [], []], types=["long int"] + ["Scalar"] * 6)
        return self.mod("TinyLM", 0, [
            self.mod("Embedding", 0, [
                self.cast(lbl),
                Node("aten::embedding", kids=[self.leaf("aten::index_select", [("gather", 40)], [[V, C], [], [N]],
                                                        key="emb", types=["float", "Scalar", "long int"],
                                                        out=[[N, C]], allocs=[(N * C * F32, "save")])],
                     dims=[[V, C], lbl, [], [], []], types=["float", "long int", "Scalar", "Scalar", "Scalar"])]),
            self.block(0), self.block(1),
            self.mod("LayerNorm", 4, [self.layer_norm("lnf")]),
            self.mod("Linear", 8, [self.linear("head", C, V, 500, bias=False)]),
            to,
            self.mod("CrossEntropyLoss", 0, [
                self.cast(lbl),
                Node("aten::cross_entropy_loss", kids=[
                    Node("aten::log_softmax", kids=[self.leaf("aten::_log_softmax", [("logsm", 200)], [[N, V], [], []],
                                                              key="logsm", types=["float", "Scalar", "Scalar"],
                                                              allocs=[(N * V * F32, "save")])],
                         dims=[[N, V], [], []], types=["float", "Scalar", "ScalarType"]),
                    Node("aten::nll_loss_nd", kids=[Node("aten::nll_loss", kids=[self.leaf(
                        "aten::nll_loss_forward", [("nll", 20)], [[N, V], [N], [], [], []], key="nll",
                        types=["float", "long int", "", "Scalar", "Scalar"], out=[[], []],
                        allocs=[(512, "save"), (512, "save")])], dims=[[N, V], [N], [], [], []],
                        types=["float", "long int", "", "Scalar", "Scalar"])],
                        dims=[[N, V], [N], [], [], []], types=["float", "long int", "", "Scalar", "Scalar"])],
                     dims=[[B, T, V], lbl, [], [], [], []], types=["float", "long int", "", "Scalar", "Scalar",
                                                                 "Scalar"])]),
        ])

    def bnode(self, name, key, kids):
        inner = Node(name, kids=kids, key=key, bwd=True, pre=3.2, post=2.0)
        return Node("autograd::engine::evaluate_function: " + name, kids=[inner], pre=3.0, post=3.5)

    def mm_bwd(self, name, key, a, b_, c, dur, bias=True):
        """AddmmBackward0 / MmBackward0: grad input (a x c), grad weight (c x b_), bias grad."""
        kk = "mm"
        kids = [self.leaf("aten::mm", [(kk, dur)], [[N, c], [c, b_]], out=[[N, b_]], allocs=[(N * b_ * F32, "tmp")]),
                self.leaf("aten::mm", [(kk, dur)], [[c, N], [N, b_]], out=[[c, b_]], allocs=[(c * b_ * F32, "grad")])]
        if bias:
            kids.append(self.leaf("aten::sum", [("sum", 20)], [[N, c], [], []], types=["float", "ScalarList", "Scalar"],
                                  out=[[c]], allocs=[(c * F32, "grad")]))
        return self.bnode(name, key, kids)

    def ln_bwd(self, key):
        ln = self.var.get("ln", 1.0)
        return self.bnode("NativeLayerNormBackward0", key, [self.leaf(
            "aten::native_layer_norm_backward", [("ln_bwd_x", 40 * ln), ("ln_bwd_gb", 20 * ln)],
            [[B, T, C], [B, T, C], [], [B, T, 1], [B, T, 1], [C], [C], []],
            types=["float"] * 2 + ["ScalarList"] + ["float"] * 4 + ["ScalarList"], out=[[B, T, C], [C], [C]],
            allocs=[(N * C * F32, "tmp"), (C * F32, "grad"), (C * F32, "grad")])])

    def bmm_bwd(self, key, sa, sb):
        return self.bnode("BmmBackward0", key, [
            self.leaf("aten::bmm", [("bmm", 160)], [sa, sb], allocs=[(sa[0] * sa[1] * sa[2] * F32, "tmp")]),
            self.leaf("aten::bmm", [("bmm", 160)], [sb, sa], allocs=[(sb[0] * sb[1] * sb[2] * F32, "tmp")])])

    def block_bwd(self, b):
        k = lambda s: f"b{b}.{s}"  # noqa: E731
        bh, bd = [B * NH, T, T], [B * NH, T, D]
        score = B * NH * T * T * F32
        return [
            self.mm_bwd("AddmmBackward0", k("fc2"), 4 * C, C, C, 400),
            self.bnode("GeluBackward0", k("gelu"), [self.leaf("aten::gelu_backward", [("gelu_bwd", 80)],
                                                              [[B, T, 4 * C], [B, T, 4 * C]],
                                                              allocs=[(N * 4 * C * F32, "tmp")])]),
            self.mm_bwd("AddmmBackward0", k("fc1"), C, 4 * C, 4 * C, 400),
            self.ln_bwd(k("ln2")),
            self.mm_bwd("AddmmBackward0", k("proj"), C, C, C, 100),
            self.bmm_bwd(k("av"), bh, bd),
            self.bnode("SoftmaxBackward0", k("sm"), [self.leaf(
                "aten::_softmax_backward_data", [("softmax_bwd", 120)], [[B, NH, T, T], [B, NH, T, T], [], []],
                types=["float", "float", "Scalar", "ScalarType"], allocs=[(score, "tmp")])]),
            self.bnode("DivBackward0", k("div"), [self.leaf("aten::div", [("div", 60)], [[B, NH, T, T], []],
                                                            types=["float", "Scalar"], allocs=[(score, "tmp")])]),
            self.bmm_bwd(k("qk"), bd, [B * NH, D, T]),
            self.mm_bwd("AddmmBackward0", k("qkv"), C, 3 * C, 3 * C, 300),
            self.ln_bwd(k("ln1")),
        ]

    def backward(self):
        nodes = [
            self.bnode("NllLossBackward0", "nll", [
                self.cast([N]),
                self.leaf("aten::nll_loss_backward", [("nll_bwd", 20)], [[], [N, V], [N], [], [], [], []],
                          types=["float", "float", "long int", "", "Scalar", "Scalar", "float"],
                          allocs=[(N * V * F32, "tmp")])]),
            self.bnode("LogSoftmaxBackward0", "logsm", [self.leaf(
                "aten::_log_softmax_backward_data", [("logsm_bwd", 200)], [[N, V], [N, V], [], []],
                types=["float", "float", "Scalar", "ScalarType"], allocs=[(N * V * F32, "tmp")])]),
            self.mm_bwd("MmBackward0", "head", V, C, C, 500, bias=False),
            self.ln_bwd("lnf"),
        ]
        nodes[2].kids[0].kids[0].kern = [("mm_head", 500)]
        nodes[2].kids[0].kids[1].kern = [("mm_head", 500)]
        nodes += self.block_bwd(1) + self.block_bwd(0)
        nodes.append(self.bnode("EmbeddingBackward0", "emb", [
            self.cast([B, T]),
            Node("aten::embedding_backward", kids=[self.leaf(
                "aten::embedding_dense_backward", [("emb_bwd", 60)], [[B, T, C], [B, T], [], [], []],
                types=["float", "long int", "Scalar", "Scalar", "Scalar"], out=[[V, C]],
                allocs=[(V * C * F32, "grad")])], dims=[[B, T, C], [B, T], [], [], [], []],
                types=["float", "long int", "Scalar", "Scalar", "Scalar", "Scalar"])]))
        if self.dev == "GPU":
            comm = Node("c10d::allreduce_", kids=[Node("record_param_comms", kids=[self.leaf(
                "nccl:all_reduce", [("nccl", NCCL_US)], [], cat="user_annotation", launch="cudaLaunchKernelExC")],
                pre=8.0)], dims=[[], [], [], [], []], types=["TensorList", "", "", "", "Scalar"], pre=12.0, post=20.0)
        else:
            comm = Node("c10d::allreduce_", kids=[self.leaf(
                "HcclAllreduce", [("nccl", self.var["hcom"])], [[GRAD_TOTAL // 4]], pre=4.0)],
                dims=[[], [], [], [], []], types=["TensorList", "", "", "", "Scalar"], pre=12.0, post=20.0)
        nodes.append(Node("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", kids=[comm]))
        return nodes

    def optimizer(self):
        lst = [[]] * 3
        extra = self.var.get("opt_extra", {})        # planted #9: a slower optimizer in the NPU runs
        d = lambda kind, us_: [(kind, us_ + extra.get(kind, 0))]  # noqa: E731
        return Node("Optimizer.step#AdamW.step", kids=[
            self.leaf("aten::_foreach_mul_", d("fe_mul", 60), [[], []], types=["TensorList", "Scalar"]),
            self.leaf("aten::_foreach_lerp_", d("fe_lerp", 100), [[], [], []], types=["TensorList"] * 2 + ["Scalar"]),
            self.leaf("aten::_foreach_addcmul_", d("fe_addcmul", 100), lst + [[]],
                      types=["TensorList"] * 3 + ["Scalar"]),
            self.leaf("aten::_foreach_addcdiv_", d("fe_addcdiv", 140), lst + [[]],
                      types=["TensorList"] * 3 + ["Scalar"]),
        ], pre=40.0, post=25.0)
