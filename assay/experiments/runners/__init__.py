"""The built-in runners, one declaration each (see :mod:`assay.experiments._runners`): its
options, its run (the runner's own module, imported when it runs), its report and its console
printer. Light on purpose: the command line reads every declaration to build its parser."""
