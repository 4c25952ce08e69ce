"""Operating-system process supervision: process groups, the table of live children, the
sentinel that reaps them, and parent-death signals. Every layer may use it."""
