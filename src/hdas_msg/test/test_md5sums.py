"""The generated hdas_msg types must carry the vendor's md5sums.

rospy refuses to connect a publisher and a subscriber whose md5sums differ, and
rosbag records them; equal md5sums are what make our nodes drop-in for the
vendor's nodes and readable from the vendor's bags.
"""
import importlib

import pytest

# Values read from the vendor's generated Python modules (R1 SDK V1.0.1).
VENDOR_MD5 = {
    "motor_control": "76f26ea10e82a40ac9f0b5a1eee1c048",
    "feedback_status": "7a6984c65a4a87fe80ef0491240438e9",
    "feedback_status_detail": "e5280425d3fdc62c9f07e542e68626f8",
    "bms": "67510a0011fd924169d84e754f550505",
    "controller_signal": "8e6ccbca8cd4108e7851c191481bfb77",
    "controller_signal_stamped": "9f3c78c4e4c0f9ec5baa690b438713b9",
    "imu": "7875a006442e0192d8390ff9c513dcaa",
    "Drivetrain": "0a54847f1086c67159c1bb023398666f",
    "DrivetrainStamped": "f731134f85be793a265c7e5e23d03ca6",
}
VENDOR_SRV_MD5 = {"FunctionFrame": "28ca10d14356fafac343096e46d08b18"}
VENDOR_SRV_PART_PREFIX = {"FunctionFrameRequest": "36e1d21d", "FunctionFrameResponse": "937c9679"}

msg = importlib.import_module("hdas_msg.msg")
srv = importlib.import_module("hdas_msg.srv")


@pytest.mark.parametrize("name,md5", sorted(VENDOR_MD5.items()))
def test_message_md5_matches_vendor(name: str, md5: str) -> None:
    cls = getattr(msg, name)
    assert cls._type == f"hdas_msg/{name}"
    assert cls._md5sum == md5


def test_service_md5_matches_vendor() -> None:
    assert srv.FunctionFrame._type == "hdas_msg/FunctionFrame"
    assert srv.FunctionFrame._md5sum == VENDOR_SRV_MD5["FunctionFrame"]
    for part, prefix in VENDOR_SRV_PART_PREFIX.items():
        assert getattr(srv, part)._md5sum.startswith(prefix)


def test_every_vendor_message_is_generated() -> None:
    """No extra and no missing types: the package is the vendor's, nothing else."""
    generated = {n for n in dir(msg) if not n.startswith("_") and isinstance(getattr(msg, n), type)}
    assert generated == set(VENDOR_MD5)


def test_roundtrip_serialisation_keeps_fields() -> None:
    import io

    m = msg.motor_control(name="left_arm", p_des=[0.1] * 6, v_des=[1.0] * 6, kp=[140.0] * 6,
                          kd=[10.0] * 6, t_ff=[0.5] * 6, mode=1)
    buf = io.BytesIO()
    m.serialize(buf)
    out = msg.motor_control()
    out.deserialize(buf.getvalue())
    assert out.name == "left_arm" and out.mode == 1
    assert list(out.p_des) == pytest.approx([0.1] * 6)
