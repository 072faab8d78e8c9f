"""The bus's unrouted-events check (see ``inferbus_lambda.unrouted``)."""
