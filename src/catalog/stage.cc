// placeholder translation unit so the stage library links before its code lands
