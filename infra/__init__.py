"""inferbus's CDK app: settings, constructs, the stack and the app entry point."""
