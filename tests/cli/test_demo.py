from cuzk.cli.main import main


def test_demo_command_proves_and_verifies(capsys):
    assert main(["demo", "--constraints", "600", "--proofs", "2", "--backend", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.count("verified (") == 2
    assert "batch of 2 verified" in out
