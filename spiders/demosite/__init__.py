"""An offline news network whose sites syndicate each other's articles (see ``server``)."""
