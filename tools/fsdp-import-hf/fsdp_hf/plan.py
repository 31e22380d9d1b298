"""The plan attribute an imported model's module carries (docs/UserGuide.md, section 2)."""
import dataclasses

from .mlir_text import mlir_float


@dataclasses.dataclass
class Plan:
    grid: tuple = (1,)
    param_dtype: str = "f32"
    reduce_dtype: str = "f32"
    remat: str = "none"
    lr: float = 3e-5
    weight_decay: float = 0.0
    beta2: float = 0.95
    clip_grad_norm: float = 1.0

    def attribute(self):
        fields = [f"grid = [{', '.join(map(str, self.grid))}]",
                  "strategy = hybrid_shard" if len(self.grid) == 2 else "strategy = full_shard",
                  f"optimizer = #fsdp.adamw<lr = {mlir_float(self.lr)}, "
                  f"beta2 = {mlir_float(self.beta2)}, "
                  f"weight_decay = {mlir_float(self.weight_decay)}>",
                  f"clip_grad_norm = {mlir_float(self.clip_grad_norm)}"]
        if self.param_dtype != "f32":
            fields.append(f"param_dtype = {self.param_dtype}")
        if self.reduce_dtype != "f32":
            fields.append(f"reduce_dtype = {self.reduce_dtype}")
        if self.remat != "none":
            fields.append(f"remat = {self.remat}")
        return "#fsdp.plan<" + ", ".join(fields) + ">"
