"""One offscreen render pass giving a camera's colour and depth together, ROS-free.

`mujoco.Renderer` renders colour and depth in separate passes (its depth pass redraws the scene with
segmentation colours); on software OpenGL (OSMesa, llvmpipe) a pass costs milliseconds however small
the image, so a camera publishing both paid twice. `OffscreenCamera` draws the scene once and reads
both buffers of that pass with `mjr_readPixels`. It is built from MuJoCo's public rendering API the
way `mujoco.Renderer` is (a GL context, an `MjrContext` on the offscreen buffer, an `MjvScene`), and
turns the depth buffer into metres with the same reverse-Z inversion (MuJoCo 3.2's convention).

Call `close()` to free the GL context before the process ends (OSMesa contexts are not freed by
garbage collection in a defined order).
"""
from __future__ import annotations

import os
from typing import Any, Optional, Tuple

import mujoco
import numpy as np
from mujoco import gl_context


def gl_backend() -> None:
    """MuJoCo takes its GL backend from MUJOCO_GL when first imported: a process that imported it before
    the variable was set (r1_sim's package sets it) would get GLFW, which needs a display. Take the
    backend MUJOCO_GL names now, if it is OSMesa or EGL and MuJoCo loaded another."""
    want = os.environ.get("MUJOCO_GL", "").lower().strip()
    if want in ("osmesa", "egl") and getattr(gl_context, "_MUJOCO_GL", want) != want:
        if want == "osmesa":
            from mujoco.osmesa import GLContext
        else:
            from mujoco.egl import GLContext  # type: ignore[no-redef]
        gl_context.GLContext = GLContext
        gl_context._MUJOCO_GL = want


class OffscreenCamera:
    """Renders the model's fixed cameras at one resolution (width × height [px]).

    :raises ValueError: the size exceeds the model's offscreen buffer (`vis.global_.offwidth/offheight`).
    """

    def __init__(self, model: Any, width: int, height: int, max_geom: int = 10000):
        if width > model.vis.global_.offwidth or height > model.vis.global_.offheight:
            raise ValueError(f"{width}x{height} exceeds the offscreen buffer "
                             f"{model.vis.global_.offwidth}x{model.vis.global_.offheight}")
        self.model, self.width, self.height = model, int(width), int(height)
        gl_backend()
        self._rect = mujoco.MjrRect(0, 0, self.width, self.height)
        self.scene = mujoco.MjvScene(model, maxgeom=max_geom)
        self._option = mujoco.MjvOption()
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        # the backend's context class looked up now, as mujoco.Renderer does (r1_sim.sensor_rig may have
        # switched it to the one MUJOCO_GL names)
        self._gl: Optional[Any] = gl_context.GLContext(self.width, self.height)
        self._gl.make_current()
        self._context: Optional[Any] = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150.value)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, self._context)
        self._context.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZEROFAR
        self._raw_depth = np.empty((self.height, self.width), dtype=np.float32)

    def render(self, data: Any, camera_id: int, rgb: bool = True, depth: bool = True
               ) -> Tuple[Optional[np.ndarray], Optional[np.ndarray]]:
        """Colour (H, W, 3) uint8 and depth (H, W) float64 [m along the optical axis; the far plane
        where nothing was drawn] of fixed camera `camera_id` in the state `data`, from one pass (None for
        what is not asked).

        :raises RuntimeError: after `close()`."""
        if self._context is None or self._gl is None:
            raise RuntimeError("the offscreen camera is closed")
        self._gl.make_current()
        self._camera.fixedcamid = int(camera_id)
        mujoco.mjv_updateScene(self.model, data, self._option, None, self._camera,
                               mujoco.mjtCatBit.mjCAT_ALL.value, self.scene)
        mujoco.mjr_render(self._rect, self.scene, self._context)
        image = np.empty((self.height, self.width, 3), dtype=np.uint8) if rgb else None
        mujoco.mjr_readPixels(image, self._raw_depth if depth else None, self._rect, self._context)
        return (None if image is None else np.flipud(image)), (self._metres() if depth else None)

    def _metres(self) -> np.ndarray:
        """The depth buffer (reverse Z, 1 near .. 0 far) inverted to metres, as `mujoco.Renderer` does
        (the perspective's coefficients in float32, as OpenGL's, the inversion in float64)."""
        extent = self.model.stat.extent
        far = np.float32(self.model.vis.map.zfar * extent)
        near = np.float32(self.model.vis.map.znear * extent)
        c = np.float32(-0.5) * (-(far + near) / (far - near)) - np.float32(0.5)
        d = np.float32(-0.5) * (-(np.float32(2) * far * near) / (far - near))
        return np.flipud(d / (self._raw_depth.astype(np.float64) + c))

    def close(self) -> None:
        """Free the GL context and MuJoCo's render context (idempotent)."""
        if self._gl is not None:
            self._gl.free()
        self._gl = None
        if self._context is not None:
            self._context.free()
        self._context = None
