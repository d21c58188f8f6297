"""``turngraph doctor``: each check says ok, or one line with what is wrong and the fix."""
