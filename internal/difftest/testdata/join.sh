/bin/echo one two three >/dev/null
