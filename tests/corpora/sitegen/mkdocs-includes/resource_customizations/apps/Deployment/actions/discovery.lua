actions = {}
actions["restart"] = {["disabled"] = false}  -- OUTSIDE-the-root
return actions
