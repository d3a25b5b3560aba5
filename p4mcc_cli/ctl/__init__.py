"""``p4mcc ctl``: the controller's command line (arguments, commands, output)."""
