"""A workflow's net for executions that ended outside its states."""
