"""Agent skills (`skills:`): SKILL.md folders the model can activate and read."""
